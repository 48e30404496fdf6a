package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

const calcC = `#include <stdio.h>
int add(int a, int b) { return a + b; }
int main(void) {
	if (add(2, 3) != 5) { puts("FAIL add"); return 1; }
	puts("all tests passed");
	return 0;
}
`

const calcMakefile = "calc: calc.c\n\tcc -o calc calc.c\n\ntest: calc\n\t./calc\n"

// TestBoxBackendBuildsAndTestsProject runs the binary with
// terminal.backend: box and a scripted model whose commands build and test
// a small C project inside the box: the workspace is shared with the host,
// writes elsewhere stay in the box's own layer (and persist when the
// session is resumed), and the agent's provider key never enters the box.
func TestBoxBackendBuildsAndTestsProject(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	for _, bin := range []string{"cc", "make"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed", bin)
		}
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "w1", Name: "write_file", Args: args(map[string]any{"path": "calc.c", "content": calcC})},
			{ID: "w2", Name: "write_file", Args: args(map[string]any{"path": "Makefile", "content": calcMakefile})},
		}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "make", Name: "terminal", Args: args(map[string]any{"command": "make test"})}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "probe", Name: "terminal", Args: args(map[string]any{
			"command": "echo box-layer > /etc/hermes-box-e2e && hostname && env | sort"})}}},
		llmtest.Turn{Text: "Built and tested calc in the box: all tests passed."},
		// Second run (-c): the box's own layer is still there.
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "again", Name: "terminal", Args: args(map[string]any{"command": "cat /etc/hermes-box-e2e"})}}},
		llmtest.Turn{Text: "The file is still there."},
	)
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	t.Cleanup(func() { e.run("box", "rm", e.latestSessionID()) })

	res := e.mustRun("chat", "-Q", "-q", "Build and test the project")
	if !strings.Contains(res.stdout, "all tests passed") {
		t.Errorf("final answer missing:\n%s", res)
	}
	results := toolResults(t, e.request(2))
	if out := results["make"]; !strings.Contains(out, "all tests passed") {
		t.Fatalf("make test inside the box did not pass:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "calc")); err != nil {
		t.Errorf("the binary built in the box should be in the host workspace (bind mount): %v", err)
	}
	probe := toolResults(t, e.request(3))["probe"]
	if !strings.Contains(probe, "hermes-box") {
		t.Errorf("the command did not run in the box (hostname):\n%s", probe)
	}
	if !strings.Contains(probe, "HERMES_SESSION_ID=") {
		t.Errorf("HERMES_SESSION_ID missing from the box environment:\n%s", probe)
	}
	if strings.Contains(probe, fakeOpenRouterKey) || strings.Contains(probe, "OPENROUTER_API_KEY") {
		t.Errorf("the provider key reached the box:\n%s", probe)
	}
	if _, err := os.Stat("/etc/hermes-box-e2e"); err == nil {
		os.Remove("/etc/hermes-box-e2e")
		t.Fatal("a write to /etc inside the box reached the host")
	}

	e.mustRun("chat", "-Q", "-c", "-q", "Is the file still there?")
	if out := toolResults(t, e.request(5))["again"]; !strings.Contains(out, "box-layer") {
		t.Errorf("the box layer did not persist across a resumed session:\n%s", out)
	}
}
