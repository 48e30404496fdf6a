package acp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/config"
)

// An MCP server the editor supplies (session/new, load, resume) is a
// program or a URL of the editor's choosing, which may come from a
// project's own settings: it starts only once the person allows it
// through the editor (session/request_permission: allow once, always for
// this server, deny), in the default and accept_edits modes; yolo runs it
// as it runs everything. A denied server never starts in that session;
// the session works without it.

// mcpOptions are offered for starting an editor-supplied MCP server.
var mcpOptions = []sdk.PermissionOption{
	{OptionId: optOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: optAlways, Name: "Always allow this server (until hermes acp exits)", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: optDeny, Name: "Deny", Kind: sdk.PermissionOptionKindRejectOnce},
}

// mcpGate holds a new session's MCP servers back until the editor knows
// the session (its session/new answer is out): the permission request
// names the session.
type mcpGate struct {
	ready chan struct{}
	as    *acpSession // set before ready closes; nil when the open failed
}

func newMCPGate() *mcpGate { return &mcpGate{ready: make(chan struct{})} }

// open lets the gate's requests go, for as (nil: deny them all).
func (g *mcpGate) open(as *acpSession) {
	g.as = as
	close(g.ready)
}

// permit is session.OpenOptions.PermitMCP for the gate's session.
func (s *Server) permit(g *mcpGate) func(ctx context.Context, name string, c config.MCPServer) bool {
	return func(ctx context.Context, name string, c config.MCPServer) bool {
		select {
		case <-g.ready:
		case <-ctx.Done():
			return false
		}
		if g.as == nil {
			return false
		}
		return s.askMCP(ctx, g.as, name, c)
	}
}

// mcpGrant identifies a server for "always allow": its name and what it
// runs or reaches (a server of the same name running something else asks
// again). A digest, so that env and header values are not kept.
func mcpGrant(name string, c config.MCPServer) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q", name, c.Command, c.Args, c.URL)
	return hex.EncodeToString(h.Sum(nil))
}

// describeMCP is what the person is asked about: the command line or URL,
// never env or header values (secrets).
func describeMCP(name string, c config.MCPServer) string {
	if c.URL != "" {
		return fmt.Sprintf("Connect to MCP server %s at %s", name, c.URL)
	}
	return fmt.Sprintf("Start MCP server %s: %s", name, strings.Join(append([]string{c.Command}, c.Args...), " "))
}

// askMCP asks the person whether the editor's server name may start.
func (s *Server) askMCP(ctx context.Context, as *acpSession, name string, c config.MCPServer) bool {
	if as.getMode() == ModeYolo {
		return true
	}
	grant := mcpGrant(name, c)
	s.mu.Lock()
	always := s.mcpAlways[grant]
	s.mu.Unlock()
	if always {
		return true
	}
	where := "on this machine, under the local guard like the agent's commands"
	if as.rt.Isolated() {
		where = "inside the session's sandbox"
	}
	if c.URL != "" {
		where = "over the network from this machine"
	}
	rctx, cancel := s.in.clientCtx(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	title := describeMCP(name, c)
	resp, err := s.conn.RequestPermission(rctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(as.s.ID()), Options: mcpOptions,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId("mcp-server-" + name), Title: sdk.Ptr(title),
			Kind: sdk.Ptr(sdk.ToolKindExecute), Status: sdk.Ptr(sdk.ToolCallStatusPending),
			Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(title + "\n\nThe editor supplied this MCP server; it runs " + where +
				" with the files and network that reach, and its tools ask before each call."))},
			RawInput: map[string]any{"server": name, "command": c.Command, "args": c.Args, "url": c.URL}},
	})
	if err != nil {
		s.opts.Logger.Info("MCP server permission ended without an answer: not started", "session", as.s.ID(), "server", name, "err", err)
		return false
	}
	switch selected(resp) {
	case optOnce:
		return true
	case optAlways:
		s.mu.Lock()
		s.mcpAlways[grant] = true
		s.mu.Unlock()
		return true
	}
	s.opts.Logger.Info("MCP server denied by the person: not started", "session", as.s.ID(), "server", name)
	return false
}
