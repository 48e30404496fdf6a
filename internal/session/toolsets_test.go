package session

import (
	"context"
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

// platform_toolsets chooses each platform's tools and
// agent.disabled_toolsets removes toolsets or tools from all of them (ACP
// offered and ran terminal although both said no); the system prompt
// names only the platform's tools. Unknown keys and toolsets are refused.
func TestPlatformToolsetsAndDisabledToolsets(t *testing.T) {
	srv := llmtest.NewServer(t)
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.Config.Config.PlatformToolsets = map[string][]string{"acp": {"file", "terminal"}, "telegram": {"memory"}}
		o.Config.Config.Agent.DisabledToolsets = []string{"terminal", "search_files"}
		o.Platform = "cli"
	})
	tools := func(platform string) []string {
		s, err := rt.Open(context.Background(), OpenOptions{Key: platform + ":x", Source: platform, Platform: platform})
		if err != nil {
			t.Fatal(err)
		}
		return s.Tools().Names()
	}
	acp := tools("acp")
	if slices.Contains(acp, "terminal") || slices.Contains(acp, "search_files") || !slices.Contains(acp, "read_file") || slices.Contains(acp, "memory") {
		t.Errorf("acp tools = %v; want the file toolset without search_files, no terminal", acp)
	}
	if tg := tools("telegram"); !slices.Equal(tg, []string{"memory"}) {
		t.Errorf("telegram tools = %v, want [memory]", tg)
	}
	cli := tools("cli")
	if slices.Contains(cli, "terminal") || !slices.Contains(cli, "memory") || !slices.Contains(cli, "read_file") {
		t.Errorf("cli tools = %v; want every toolset but terminal", cli)
	}
	if p := rt.buildSystemPrompt("x", "acp"); strings.Contains(p, "the memory tool") {
		t.Errorf("the acp system prompt gives guidance for the memory tool it does not have")
	}
	if p := rt.buildSystemPrompt("x", "telegram"); !strings.Contains(p, "the memory tool") {
		t.Errorf("the telegram system prompt lacks the memory guidance")
	}
	for _, c := range []struct {
		cfg  config.Config
		want string
	}{
		{config.Config{PlatformToolsets: map[string][]string{"tui": {"file"}}}, "platform_toolsets.tui: unknown platform"},
		{config.Config{PlatformToolsets: map[string][]string{"acp": {"fiel"}}}, "platform_toolsets.acp: unknown toolset fiel"},
		{config.Config{Agent: config.AgentConfig{DisabledToolsets: []string{"terminl"}}}, "agent.disabled_toolsets: unknown toolset terminl"},
	} {
		if err := CheckToolsetKeys(rt.allTools, &c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckToolsetKeys(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}
