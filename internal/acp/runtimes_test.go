package acp

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// A client opening (and closing) sessions in ever new workspaces keeps at
// most MaxRuntimes runtimes started: idle ones are closed, least recently
// used first. A session left open keeps its runtime and still answers.
func TestRuntimesBounded(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "still here"})
	w.maxRuntimes = 2
	c := w.connect(sdk.ClientCapabilities{})
	ctx := context.Background()
	kept, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: w.work, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		resp, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: resp.SessionId}); err != nil {
			t.Fatal(err)
		}
	}
	c.srv.mu.Lock()
	started := len(c.srv.runtimes)
	c.srv.mu.Unlock()
	if started > 2 {
		t.Errorf("%d workspace runtimes started, want at most MaxRuntimes = 2", started)
	}
	if r := c.prompt(t, string(kept.SessionId), "hello"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("the open session's prompt ended %q", r.StopReason)
	}
	if got := agentText(c.snapshot()); got != "still here" {
		t.Errorf("the open session answered %q", got)
	}
}

// A session in a workspace that does not exist is refused naming the
// editor's cwd, not terminal.cwd of config.yaml (the message sent the
// person to `hermes config set terminal.cwd`).
func TestNewSessionMissingCwd(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "unused"})
	c := w.connect(sdk.ClientCapabilities{})
	missing := filepath.Join(w.work, "gone")
	_, err := c.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: missing, McpServers: []sdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "is not a directory") || strings.Contains(err.Error(), "terminal.cwd") {
		t.Fatalf("session/new in %s: %v", missing, err)
	}
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("error %v is not invalid params", err)
	}
}
