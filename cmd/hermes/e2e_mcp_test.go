package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
)

// A one-shot chat uses the tools of an MCP server added with `hermes mcp
// add`; a server that cannot start is told once on stderr and does not
// stop the run; the server never sees the provider key.
func TestMCPServerToolsInOneShotChat(t *testing.T) {
	bin := mcptest.Bin(t, "mcp-server-everything")
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "sum", Name: "mcp__ev__get_sum", Args: `{"a":40,"b":2}`},
			{ID: "env", Name: "mcp__ev__get_env", Args: `{}`},
		}},
		llmtest.Turn{Text: "The sum is 42."},
	)
	e.configureModel()
	e.mustRun("mcp", "add", "ev", "--env", "WIDGET_API_KEY=widget-secret-0123456789", "--", bin)
	e.mustRun("mcp", "add", "broken", "--", "/nonexistent/mcp-server")
	res := e.mustRun("chat", "-Q", "-q", "add 40 and 2")
	if !strings.Contains(res.stdout, "The sum is 42.") {
		t.Fatalf("answer:\n%s", res)
	}
	if n := strings.Count(res.stderr, "MCP server broken failed to start"); n != 1 {
		t.Fatalf("broken server told %d times:\n%s", n, res.stderr)
	}
	results := toolResults(t, e.request(1))
	if !strings.Contains(results["sum"], "42") {
		t.Fatalf("get-sum: %q", results["sum"])
	}
	env := results["env"]
	if !strings.Contains(env, "WIDGET_API_KEY") || strings.Contains(env, "widget-secret-0123456789") || strings.Contains(env, fakeOpenRouterKey) || strings.Contains(env, "OPENROUTER") {
		t.Fatalf("get-env result (secret must be redacted, provider key absent):\n%s", env)
	}
	for _, name := range []string{"state.db", "state.db-wal"} {
		if b, _ := os.ReadFile(filepath.Join(e.home, name)); strings.Contains(string(b), "widget-secret-0123456789") {
			t.Fatalf("the MCP secret is in %s", name)
		}
	}
}

// With terminal.backend: box a stdio server runs inside the session's box
// (it sees the box's environment); host: true keeps one on the host.
func TestMCPServerRunsInsideTheBox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	bin := mcptest.Bin(t, "mcp-server-everything")
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "root", Name: "mcp__boxed__get_roots_list", Args: `{}`},
			{ID: "boxed", Name: "mcp__boxed__get_env", Args: `{}`},
			{ID: "onhost", Name: "mcp__onhost__get_env", Args: `{}`},
		}},
		llmtest.Turn{Text: "done"},
	)
	// The box shows the host's system but not this checkout: the server
	// (node_modules) is copied into the workspace, which the box shares,
	// and started by a path relative to it.
	modules := filepath.Dir(filepath.Dir(bin))
	if out, err := exec.Command("cp", "-a", modules, filepath.Join(e.workspace, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("copying the server: %v %s", err, out)
	}
	rel := "node_modules/.bin/mcp-server-everything"
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	e.mustRun("mcp", "add", "boxed", "--", rel)
	e.mustRun("mcp", "add", "onhost", "--host", "--", rel)
	t.Cleanup(func() { e.run("box", "rm", e.latestSessionID()) })
	res := e.mustRun("chat", "-Q", "-q", "where do you run?")
	results := toolResults(t, e.request(1))
	if !strings.Contains(results["boxed"], "HERMES_SESSION_ID") {
		t.Fatalf("the boxed server did not run in the box:\n%s\n%s", results["boxed"], res)
	}
	if strings.Contains(results["onhost"], "HERMES_SESSION_ID") || !strings.Contains(results["onhost"], "PATH") {
		t.Fatalf("the host server ran in the box:\n%s", results["onhost"])
	}
	if !strings.Contains(results["root"], "file://") {
		t.Fatalf("the boxed server got no root:\n%s", results["root"])
	}
	t.Logf("box root: %s", results["root"])
}
