package session

import (
	"fmt"
	"maps"
	"sort"

	"github.com/hermes-go/hermes/internal/config"
)

// clientSuffix marks a session's own MCP server (an ACP client's) whose
// name a configured server already holds.
const clientSuffix = "-client"

// mcpServers merges config.yaml's mcp_servers, the runtime's
// Options.MCPServers and a session's own servers (an ACP client's
// session/new mcpServers). A session's server never replaces a configured
// one: the user's entry keeps its name, command, trust and tools
// include/exclude, and the session's server connects beside it as
// <name>-client (then -client2, -client3, ...), so a client cannot lift an
// untrusted server to trusted or bring back excluded tools by reusing its
// name. renamed maps each renamed server's original name to its new one.
func (rt *Runtime) mcpServers(session map[string]config.MCPServer) (out map[string]config.MCPServer, renamed map[string]string) {
	out = map[string]config.MCPServer{}
	maps.Copy(out, rt.cfg.MCPServers)
	maps.Copy(out, rt.opts.MCPServers)
	names := make([]string, 0, len(session))
	for n := range session {
		names = append(names, n)
	}
	sort.Strings(names) // renaming is deterministic
	for _, n := range names {
		name := n
		for i := 1; ; i++ {
			if _, taken := out[name]; !taken {
				break
			}
			name = n + clientSuffix
			if i > 1 {
				name = fmt.Sprintf("%s%s%d", n, clientSuffix, i)
			}
		}
		if name != n {
			if renamed == nil {
				renamed = map[string]string{}
			}
			renamed[n] = name
		}
		out[name] = session[n]
	}
	return out, renamed
}
