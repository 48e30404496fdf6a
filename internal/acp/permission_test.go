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

// setConfig replaces the approvals timeout line of the world's
// config.yaml with extra (before connect).
func (w *world) setConfig(extra string) { w.editConfig("  timeout: 30\n", extra) }

// editConfig replaces old with new in the world's config.yaml.
func (w *world) editConfig(old, new string) {
	w.t.Helper()
	p := filepath.Join(w.home, "config.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// A client that never answers a permission request denies it once
// approvals.timeout passes; the model reads the denial.
func TestPermissionUnansweredDenies(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: args(map[string]any{"command": "rm -r keep"})}}},
		llmtest.Turn{Text: "ok"},
	)
	w.setConfig("  timeout: 1\n")
	if err := os.MkdirAll(filepath.Join(w.work, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{})
	never := make(chan struct{})
	defer close(never)
	c.answer = func(sdk.RequestPermissionRequest) string { <-never; return optOnce }
	id := c.newSession(t, w.work)
	if resp := c.prompt(t, id, "delete keep"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", resp.StopReason)
	}
	if _, err := os.Stat(filepath.Join(w.work, "keep")); err != nil {
		t.Errorf("the unanswered command ran: %v", err)
	}
	if body := string(w.srv.Requests()[1].Body); !strings.Contains(strings.ToLower(body), "denied") && !strings.Contains(strings.ToLower(body), "not approved") {
		t.Errorf("the model was not told the command was refused: %s", body)
	}
}

// A client that disconnects while a permission request is open denies it:
// the command never runs.
func TestPermissionDisconnectDenies(t *testing.T) {
	w := newWorld(t, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: args(map[string]any{"command": "rm -r keep"})}}})
	if err := os.MkdirAll(filepath.Join(w.work, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{})
	asked := make(chan struct{})
	never := make(chan struct{})
	defer close(never)
	c.answer = func(sdk.RequestPermissionRequest) string { close(asked); <-never; return optOnce }
	id := c.newSession(t, w.work)
	go func() {
		_, _ = c.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sdk.SessionId(id), Prompt: []sdk.ContentBlock{sdk.TextBlock("delete keep")}})
	}()
	<-asked
	c.disconnect() // Serve returns once the turn has ended
	if _, err := os.Stat(filepath.Join(w.work, "keep")); err != nil {
		t.Errorf("the command ran after the client left: %v", err)
	}
}

// The permission request of a dangerous command says "Needs approval"
// once (it read "Needs approval: needs approval: recursive rm of keep").
func TestPermissionReasonNotDoubled(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: args(map[string]any{"command": "rm -r keep"})}}},
		llmtest.Turn{Text: "ok"},
	)
	if err := os.MkdirAll(filepath.Join(w.work, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{})
	id := c.newSession(t, w.work)
	c.prompt(t, id, "delete keep")
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.permissions) != 1 || len(c.permissions[0].ToolCall.Content) == 0 || c.permissions[0].ToolCall.Content[0].Content == nil {
		t.Fatalf("permission requests %+v", c.permissions)
	}
	text := c.permissions[0].ToolCall.Content[0].Content.Content.Text.Text
	if n := strings.Count(strings.ToLower(text), "needs approval"); n != 1 || !strings.Contains(text, "Needs approval: recursive rm of keep") {
		t.Errorf("permission text %q says \"needs approval\" %d times", text, n)
	}
}
