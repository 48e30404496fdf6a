package acp

import (
	"fmt"

	sdk "github.com/coder/acp-go-sdk"
)

// ClientMCPServer is an MCP server an ACP client sends with session/new or
// session/load, in the shape of config.yaml's mcp_servers entries: stdio
// (Command, Args, Env) or HTTP (URL, Headers; SSE marks the legacy SSE
// transport). Env and Headers values are secrets: never logged or stored.
type ClientMCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	SSE     bool
}

// clientMCPServers converts a client's mcpServers, keyed by name (a later
// server of the same name wins). Servers of transports hermes cannot
// speak (ACP-tunnelled) are left out and named in skipped.
func clientMCPServers(in []sdk.McpServer) (out map[string]ClientMCPServer, skipped []string) {
	out = map[string]ClientMCPServer{}
	for _, s := range in {
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			out[s.Stdio.Name] = ClientMCPServer{Name: s.Stdio.Name, Command: s.Stdio.Command, Args: s.Stdio.Args, Env: env}
		case s.Http != nil:
			out[s.Http.Name] = ClientMCPServer{Name: s.Http.Name, URL: s.Http.Url, Headers: headers(s.Http.Headers)}
		case s.Sse != nil:
			out[s.Sse.Name] = ClientMCPServer{Name: s.Sse.Name, URL: s.Sse.Url, Headers: headers(s.Sse.Headers), SSE: true}
		case s.Acp != nil:
			skipped = append(skipped, fmt.Sprintf("%s (acp transport)", s.Acp.Name))
		}
	}
	return out, skipped
}

func headers(in []sdk.HttpHeader) map[string]string {
	out := map[string]string{}
	for _, h := range in {
		out[h.Name] = h.Value
	}
	return out
}
