package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
)

// markerServer is an editor-supplied stdio server that writes marker when
// it starts, then serves MCP.
func markerServer(bin, marker string) sdk.McpServer {
	return sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: "marker", Command: "/bin/sh",
		Args: []string{"-c", `touch "$0" && exec "$1"`, marker, bin}, Env: []sdk.EnvVariable{}}}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// An MCP server sent with session/new ran on the host at once, before
// anything was asked. It starts only once the person allows it through
// the editor; a denied one never starts, and its session still works;
// "always" is not asked again.
func TestClientMCPServerStartsOnlyWhenAllowed(t *testing.T) {
	bin := mcptest.Bin(t, "mcp-server-everything")
	w := newWorld(t, llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"}, llmtest.Turn{Text: "three"})
	c := w.connect(sdk.ClientCapabilities{})
	asked := make(chan sdk.RequestPermissionRequest, 4)
	answers := make(chan string, 4)
	c.answer = func(p sdk.RequestPermissionRequest) string {
		asked <- p
		return <-answers
	}
	question := func() sdk.RequestPermissionRequest {
		t.Helper()
		select {
		case p := <-asked:
			return p
		case <-time.After(2 * time.Minute):
			t.Fatal("no permission request for the editor's MCP server")
		}
		return sdk.RequestPermissionRequest{}
	}
	open := func(marker string) string {
		t.Helper()
		resp, err := c.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: w.work, McpServers: []sdk.McpServer{markerServer(bin, marker)}})
		if err != nil {
			t.Fatal(err)
		}
		return string(resp.SessionId)
	}

	allowed := filepath.Join(w.work, "allowed-marker")
	id := open(allowed)
	p := question()
	if string(p.SessionId) != id || p.ToolCall.Title == nil || !strings.Contains(*p.ToolCall.Title, "marker") {
		t.Fatalf("permission request %+v, want one for server marker of session %s", p, id)
	}
	if exists(allowed) {
		t.Fatal("the editor's MCP server started before the person answered")
	}
	answers <- optAlways
	if r := c.prompt(t, id, "hello"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	if !exists(allowed) {
		t.Fatal("the allowed MCP server did not start")
	}

	denied := filepath.Join(w.work, "denied-marker")
	id = open(denied)
	question()
	answers <- optDeny
	if r := c.prompt(t, id, "hello again"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("session with a denied server: stop reason %q", r.StopReason)
	}
	if exists(denied) {
		t.Fatal("a denied MCP server started")
	}
	if !strings.Contains(string(w.srv.Requests()[1].Body), "hello again") {
		t.Fatal("the session with a denied server did not reach the model")
	}

	// Allowed always: the same server (same command) is not asked again.
	id = open(allowed)
	if r := c.prompt(t, id, "third"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	select {
	case p := <-asked:
		t.Fatalf("asked again about a server allowed always: %+v", p)
	default:
	}
}
