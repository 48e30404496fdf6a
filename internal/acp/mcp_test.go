package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"
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
}
