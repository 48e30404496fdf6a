package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
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

// ownGroups lists the box cgroups of hermes process pid in every
// hierarchy (their names start with the owner's pid: cgroup_owner.go).
func ownGroups(pid int) []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/*/hermes/%d_*", "/sys/fs/cgroup/hermes/%d_*"} {
		m, _ := filepath.Glob(fmt.Sprintf(pat, pid))
		out = append(out, m...)
	}
	return out
}

// loopsUnder lists the loop devices whose backing file is under dir.
func loopsUnder(dir string) []string {
	var out []string
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), dir+"/") {
			out = append(out, f)
		}
	}
	return out
}

// TestBoxLeftoversOfKilledHermesAreCleaned: a hermes SIGKILLed while its
// box runs a command and a prestarted spare waits leaves empty cgroups;
// the next hermes (box ls) removes them (issue 17).
func TestBoxLeftoversOfKilledHermesAreCleaned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "hang", Name: "terminal", Args: args(map[string]any{"command": "sleep 600"})}}},
		llmtest.Turn{Text: "done"},
	)
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, _, stderr := e.command(ctx, nil, "chat", "-Q", "-q", "wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait for the box (running sleep) and the refilled spare.
	deadline := waitfor.Deadline(t)
	for {
		var box, spare bool
		for _, g := range ownGroups(pid) {
			procs, _ := os.ReadFile(filepath.Join(g, "cgroup.procs"))
			switch {
			case strings.HasSuffix(g, "_.spare"):
				spare = true
			case len(strings.Fields(string(procs))) >= 2: // init and sleep at least
				box = true
			}
		}
		if box && spare {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running box and spare of hermes %d after 90 s: groups %q\n%s", pid, ownGroups(pid), stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(ownGroups(pid)) == 0 {
		t.Fatal("no cgroups were left to clean: the test does not test the sweep")
	}
	// The killed hermes's inits end as their sockets close; then its groups
	// are empty, and the next hermes removes them.
	var res result
	for deadline := waitfor.Deadline(t); ; {
		res = e.mustRun("box", "ls")
		if len(ownGroups(pid)) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left := ownGroups(pid); len(left) > 0 {
		t.Fatalf("hermes box ls left the killed hermes's cgroups: %q\n%s", left, res)
	}
	if !strings.Contains(res.stderr, "removed") && !strings.Contains(res.stderr, "left alone") {
		t.Logf("box ls said nothing about the leftovers:\n%s", res)
	}
	if spares, _ := os.ReadDir(filepath.Join(e.home, "boxes", ".spare")); len(spares) > 0 {
		t.Errorf("the killed hermes's prestart files are still there: %v", spares)
	}
	for deadline := waitfor.Deadline(t); len(loopsUnder(e.home)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if loops := loopsUnder(e.home); len(loops) > 0 {
		t.Errorf("loop devices still attached to the killed hermes's box images: %q", loops)
	}
}
