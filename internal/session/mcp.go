package session

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/hermes-go/hermes/internal/mcp"
	"github.com/hermes-go/hermes/internal/tool"
)

// startMCP gives s its own tool registry and connects its MCP servers in
// the background (the first turn waits for them). Without servers the
// session shares the runtime's registry.
func (rt *Runtime) startMCP(s *Session, client clientMCP) {
	extra := client.servers
	for _, srv := range extra { // a client's env and header secrets
		rt.redact.Add(srv.SecretValues()...)
	}
	servers, renamed := rt.mcpServers(extra)
	clientNames := map[string]bool{}
	for n := range extra {
		if to, ok := renamed[n]; ok {
			n = to
		}
		clientNames[n] = true
	}
	for _, from := range slices.Sorted(maps.Keys(renamed)) {
		rt.opts.Warn(fmt.Sprintf("warning: the client's MCP server %s connects as %s: mcp_servers in config.yaml already has a server %s (its trust and tool filters stay its own)", from, renamed[from], from))
	}
	tools := rt.toolsFor(s.platform)
	if len(servers) == 0 {
		s.tools = tools
		return
	}
	toolsets := rt.toolsetsFor(s.platform)
	s.tools = tools.Clone()
	s.mcp = mcp.Start(mcp.Options{
		Servers: servers, SessionID: s.id, Workspace: rt.cwd, Backend: rt.backend, Environ: rt.opts.Environ,
		Tools: s.tools, Toolsets: toolsets, CacheDir: filepath.Join(rt.opts.Home, "cache", "mcp"), Approvals: rt.approvals, Redact: rt.redact.Redact,
		Warn: func(msg string) { rt.opts.Warn(rt.redact.Redact(msg)) }, Sample: mcp.ProviderSampler(rt.provider, rt.model), Version: "hermes", Now: rt.opts.Now,
		ClientServers: clientNames, Permit: client.permit,
	})
}

// mcpReady waits for the session's MCP servers' first connects and
// restarts, in the background, servers that are down.
func (s *Session) mcpReady(ctx context.Context) {
	if s.mcp == nil {
		return
	}
	_ = s.mcp.Ready(ctx)
	s.mcp.Revive()
}

// MCPStatus reports the state of the session's MCP servers (nil without).
func (s *Session) MCPStatus() []mcp.Status {
	if s.mcp == nil {
		return nil
	}
	return s.mcp.Status()
}

// Tools is the session's tool registry: the runtime's tools plus its MCP
// servers' tools, which come and go as servers connect, change and stop.
func (s *Session) Tools() *tool.Registry { return s.tools }
