package acp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
)

// A client's stdio, HTTP and SSE servers become mcp_servers entries;
// ACP-tunnelled ones are named as skipped.
func TestClientMCPServers(t *testing.T) {
	got, skipped := clientMCPServers([]sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "fs", Command: "npx", Args: []string{"-y", "server-filesystem"}, Env: []sdk.EnvVariable{{Name: "TOKEN", Value: "t"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "web", Type: "http", Url: "https://x/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer k"}}}},
		{Sse: &sdk.McpServerSseInline{Name: "old", Type: "sse", Url: "https://y/sse"}},
		{Acp: &sdk.McpServerAcpInline{Name: "tunnel", Type: "acp", Id: "1"}},
	})
	if fs := got["fs"]; fs.Command != "npx" || len(fs.Args) != 2 || fs.Env["TOKEN"] != "t" {
		t.Errorf("stdio = %+v", fs)
	}
	if web := got["web"]; web.URL != "https://x/mcp" || web.Headers["Authorization"] != "Bearer k" {
		t.Errorf("http = %+v", web)
	}
	if got["old"].URL != "https://y/sse" || len(got) != 3 || len(skipped) != 1 {
		t.Errorf("servers %+v, skipped %q", got, skipped)
	}
	for name, srv := range got {
		if !srv.Untrusted() || srv.Host || srv.Sampling.Enabled {
			t.Errorf("client server %s = %+v: want untrusted, not host, no sampling", name, srv)
		}
	}
}

// An MCP server the client sends with session/new gives the session its
// tools: the model calls it through the agent loop. The client's servers
// are untrusted: the call is asked with session/request_permission first.
func TestClientMCPServerToolsReachTheModel(t *testing.T) {
	bin := mcptest.Bin(t, "mcp-server-everything")
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "mcp__everything__echo", Args: `{"message":"hello from the editor"}`}}},
		llmtest.Turn{Text: "echoed"},
	)
	c := w.connect(sdk.ClientCapabilities{})
	c.answer = func(sdk.RequestPermissionRequest) string { return optOnce } // the server's start, then its tool
	resp, err := c.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: w.work, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "everything", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.prompt(t, string(resp.SessionId), "echo something"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	first, second := string(w.srv.Requests()[0].Body), string(w.srv.Requests()[1].Body)
	if !strings.Contains(first, "mcp__everything__echo") {
		t.Errorf("the client's MCP tools were not offered to the model")
	}
	if !strings.Contains(second, "Echo: hello from the editor") {
		t.Errorf("the MCP tool result did not reach the model: %s", second)
	}
	c.mu.Lock()
	asked := 0
	for _, p := range c.permissions {
		if !strings.HasPrefix(string(p.ToolCall.ToolCallId), "mcp-server-") {
			asked++
		}
	}
	c.mu.Unlock()
	if asked != 1 {
		t.Errorf("%d permission requests for the client's (untrusted) server's tool, want 1", asked)
	}
}
