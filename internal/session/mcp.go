package session

import (
	"context"
	"maps"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/mcp"
	"github.com/hermes-go/hermes/internal/tool"
)

// mcpServers merges config.yaml's mcp_servers, the runtime's
// Options.MCPServers and a session's own (later wins by name).
func (rt *Runtime) mcpServers(session map[string]config.MCPServer) map[string]config.MCPServer {
	out := map[string]config.MCPServer{}
	maps.Copy(out, rt.cfg.MCPServers)
	maps.Copy(out, rt.opts.MCPServers)
	maps.Copy(out, session)
	return out
}

// startMCP gives s its own tool registry and connects its MCP servers in
// the background (the first turn waits for them). Without servers the
// session shares the runtime's registry.
func (rt *Runtime) startMCP(s *Session, extra map[string]config.MCPServer) {
	servers := rt.mcpServers(extra)
	if len(servers) == 0 {
		s.tools = rt.tools
		return
	}
	toolsets := rt.opts.Toolsets
	if len(toolsets) == 0 {
		toolsets = rt.cfg.Toolsets
	}
	s.tools = rt.tools.Clone()
	s.mcp = mcp.Start(mcp.Options{
		Servers: servers, SessionID: s.id, Workspace: rt.cwd, Backend: rt.backend, Environ: rt.opts.Environ,
		Tools: s.tools, Toolsets: toolsets, CacheDir: filepath.Join(rt.opts.Home, "cache", "mcp"), Approvals: rt.approvals, Redact: rt.redact.Redact,
		Warn: func(msg string) { rt.opts.Warn(rt.redact.Redact(msg)) }, Sample: mcp.ProviderSampler(rt.provider, rt.model), Version: "hermes", Now: rt.opts.Now,
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
