package session

import (
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// Toolsets lists the toolsets `hermes setup tools` offers: those of the
// built-in tools.
func TestToolsetsListsBuiltins(t *testing.T) {
	got := Toolsets()
	for _, want := range []string{"terminal", "file", "memory", "skills"} {
		if !slices.Contains(got, want) {
			t.Errorf("Toolsets() = %v, missing %s", got, want)
		}
	}
}

// --toolsets mcp-<server> selecting only a configured MCP server's tools
// does not warn that no tools are enabled (they join when it connects;
// the warning said so on every such run); mcp-<name> naming no server of
// mcp_servers, or a disabled one, is told.
func TestToolsetsMCPServerSelection(t *testing.T) {
	srv := llmtest.NewServer(t)
	for _, tc := range []struct {
		toolsets []string
		want     string // a warning expected, "" for none
	}{
		{[]string{"mcp-fs"}, ""},
		{[]string{"mcp"}, ""},
		{[]string{"mcp-nosuch"}, "toolset mcp-nosuch names no server of mcp_servers"},
		{[]string{"mcp-off"}, "mcp_servers.off has enabled: false"},
	} {
		var warnings []string
		newTestRuntime(t, srv, func(o *Options) {
			off := false
			o.Config.Config.MCPServers = map[string]config.MCPServer{
				"fs":  {Command: "/nonexistent/mcp-server"},
				"off": {Command: "/nonexistent/mcp-server", Enabled: &off},
			}
			o.Toolsets = tc.toolsets
			o.Warn = func(s string) { warnings = append(warnings, s) }
		})
		got := strings.Join(warnings, "\n")
		if tc.want == "" && strings.Contains(got, "no tools are enabled") || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("--toolsets %v: warnings %q", tc.toolsets, warnings)
		}
	}
}
