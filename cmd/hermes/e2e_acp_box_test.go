package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// boxClient is an ACP client that records permission requests (the
// acp-go-sdk client side, driving the built binary).
type boxClient struct {
	mu    sync.Mutex
	asked []string
}

func (c *boxClient) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, string(p.ToolCall.ToolCallId))
	c.mu.Unlock()
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
}
func (c *boxClient) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }
func (c *boxClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}
func (c *boxClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}
func (c *boxClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (c *boxClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (c *boxClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (c *boxClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (c *boxClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// TestACPBoxBackendAsksNothing: with terminal.backend: box, `hermes acp`
// behaves as the CLI does: the box is the boundary, so a dangerous command
// and an edit run without a permission request, inside the box.
func TestACPBoxBackendAsksNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"rm -r build && hostname"}`}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "patch", Args: `{"path":"a.txt","old_string":"one","new_string":"two"}`}}},
		llmtest.Turn{Text: "done"},
	)
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	e.writeFile("build/out.o", "x")
	e.writeFile("a.txt", "one\n")

	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, hermesBin, "acp")
	cmd.Dir = e.workspace
	cmd.Env = append(e.baseEnv(), e.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &boxClient{}
	var wire bytes.Buffer // everything hermes wrote to stdout
	conn := sdk.NewClientSideConnection(c, stdin, io.TeeReader(stdout, &wire))
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.workspace, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { e.run("box", "rm", string(ns.SessionId)) })
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("clean and edit")}})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v\n%s", resp, err, stderr.String())
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("hermes acp exit: %v\n%s", err, stderr.String())
	}
	<-conn.Done() // the client has read everything
	for _, line := range strings.Split(strings.TrimSpace(wire.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("stdout carried a line that is not protocol: %q", line)
		}
	}
	if log, err := os.ReadFile(filepath.Join(e.home, "logs", "acp.log")); err != nil || !strings.Contains(string(log), "hermes acp started") {
		t.Errorf("HERMES_HOME/logs/acp.log: %q, %v", log, err)
	}
	if len(c.asked) != 0 {
		t.Errorf("the box backend asked %d permissions: %v", len(c.asked), c.asked)
	}
	if out := toolResults(t, e.request(1)); !strings.Contains(strings.Join(mapValues(out), "\n"), "hermes-box") {
		t.Errorf("the command did not run in the box: %v", out)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "build")); !os.IsNotExist(err) {
		t.Errorf("build is still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.workspace, "a.txt")); string(b) != "two\n" {
		t.Errorf("the edit was not applied: %q", b)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
