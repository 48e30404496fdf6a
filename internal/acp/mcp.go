package acp

import (
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/config"
)

// clientMCPServers converts a client's mcpServers (session/new, load,
// resume) to mcp_servers entries, keyed by name (a later server of the
// same name wins): stdio as command/args/env, HTTP and SSE as url/headers
// (the MCP client speaks streamable HTTP with an SSE fallback). Servers of
// transports hermes cannot speak (ACP-tunnelled) are left out and named
// in skipped. Env and header values are secrets: never logged or stored.
//
// A client's server starts only once the person allows it (mcp_permit.go),
// is always trust: untrusted (every tool call asks the client through
// session/request_permission; yolo mode runs them), never samples the
// model and runs through the session's backend (inside the box, or under
// the local guard; never host: true):
// the client may be driven by a project's own settings, and only the
// user's config.yaml grants trust. A client server named like a
// config.yaml mcp_servers entry does not replace it; it connects as
// <name>-client (session.OpenOptions.MCPServers).
func clientMCPServers(in []sdk.McpServer) (out map[string]config.MCPServer, skipped []string) {
	out = map[string]config.MCPServer{}
	for _, s := range in {
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			out[s.Stdio.Name] = config.MCPServer{Command: s.Stdio.Command, Args: s.Stdio.Args, Env: env, Trust: config.MCPTrustUntrusted}
		case s.Http != nil:
			out[s.Http.Name] = config.MCPServer{URL: s.Http.Url, Headers: headers(s.Http.Headers), Trust: config.MCPTrustUntrusted}
		case s.Sse != nil:
			out[s.Sse.Name] = config.MCPServer{URL: s.Sse.Url, Headers: headers(s.Sse.Headers), Trust: config.MCPTrustUntrusted}
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
