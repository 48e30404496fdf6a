package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// session/resume reopens a stored session without replaying it (commands
// follow the response), session/set_config_option switches its model, and
// session/close frees it: a prompt then needs a load or resume.
func TestResumeConfigAndClose(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"})
	c := w.connect(sdk.ClientCapabilities{})
	id := c.newSession(t, w.work)
	c.prompt(t, id, "one")

	c2 := w.connect(sdk.ClientCapabilities{})
	ctx := context.Background()
	resp, err := c2.conn.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: sdk.SessionId(id), Cwd: w.work})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Modes == nil || resp.Modes.CurrentModeId != ModeDefault || len(resp.ConfigOptions) != 1 {
		t.Errorf("resume = %+v", resp)
	}
	c2.waitFor(t, "available_commands_update", func(u sdk.SessionUpdate) bool { return u.AvailableCommandsUpdate != nil })
	for _, n := range c2.snapshot() {
		if n.Update.UserMessageChunk != nil || n.Update.AgentMessageChunk != nil {
			t.Errorf("resume replayed history: %s", kindsOf(c2.snapshot()))
		}
	}
	set, err := c2.conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: sdk.SessionId(id), ConfigId: configModel, Value: "picked-model"}})
	if err != nil {
		t.Fatal(err)
	}
	if cur := set.ConfigOptions[0].Select.CurrentValue; cur != "picked-model" {
		t.Errorf("current model %q after set_config_option", cur)
	}
	c2.prompt(t, id, "two")
	if got := w.srv.Requests()[1].JSON()["model"]; got != "picked-model" {
		t.Errorf("model asked %v", got)
	}
	if body := string(w.srv.Requests()[1].Body); !strings.Contains(body, "first") {
		t.Errorf("resumed session lost its history: %s", body)
	}
	if _, err := c2.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: sdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	_, err = c2.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sdk.SessionId(id), Prompt: []sdk.ContentBlock{sdk.TextBlock("three")}})
	if err == nil || !strings.Contains(err.Error(), "load or resume") {
		t.Errorf("prompt after close: %v", err)
	}
}

// session/new never offers a model option with an empty name or value
// (the README's ACP example, a replayed model with no model name, got one):
// with no model known there is no model option.
func TestNewSessionModelOptionIsNeverEmpty(t *testing.T) {
	w := newWorld(t)
	cfg := "model:\n  provider: replay\n"
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w.replay = "../../examples/acp/model.jsonl"
	c := w.connect(sdk.ClientCapabilities{})
	resp, err := c.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: w.work, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range resp.ConfigOptions {
		if o.Select == nil || o.Select.Options.Ungrouped == nil {
			continue
		}
		if o.Select.CurrentValue == "" {
			t.Errorf("option %s has an empty current value", o.Select.Id)
		}
		for _, v := range *o.Select.Options.Ungrouped {
			if v.Name == "" || v.Value == "" {
				t.Errorf("option %s offers an empty choice %+v", o.Select.Id, v)
			}
		}
	}
}
