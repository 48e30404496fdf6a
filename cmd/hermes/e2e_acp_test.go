package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// tsClientDir holds the ACP TypeScript client test (npm ci by .ci/run).
const tsClientDir = "../../internal/acp/testdata/tsclient"

// TestACPWithTypeScriptClient drives the built binary, started as
// hermes-acp, with the official ACP TypeScript client: a prompt whose model
// runs a dangerous command (allowed) and a patch (denied), a second prompt
// that keeps the context, a cancel while a command runs, and a load of the
// session in a new process that replays its history.
func TestACPWithTypeScriptClient(t *testing.T) {
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Skip("the ACP TypeScript client is not installed: run `npm ci` in internal/acp/testdata/tsclient (.ci/run does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"rm -r build && echo removed"}`}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "patch", Args: `{"path":"a.txt","old_string":"one","new_string":"two"}`}}},
		llmtest.Turn{Text: "done with step one"},
		llmtest.Turn{Text: "I removed build; the edit was refused"},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"sleep 30; touch finished"}`}}},
		llmtest.Turn{Text: "continued in the terminal"},
	)
	e.configureModel()
	e.writeFile("build/out.o", "x")
	e.writeFile("a.txt", "one\n")
	link := filepath.Join(t.TempDir(), "hermes-acp")
	if err := os.Symlink(hermesBin, link); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join(tsClientDir, "e2e.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(append(e.baseEnv(), e.env...), "HERMES_ACP="+link, "WORKSPACE="+e.workspace)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n--- stdout ---\n%s\n--- stderr ---\n%s", err, out, stderr.String())
	}
	var got struct {
		SessionID                                 string
		Stop1, Stop2, Stop3                       string
		Permissions                               []string
		Answer1, Answer2, ReplayUser, ReplayAgent string
		ReplayTools, Listed                       []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if got.Stop1 != "end_turn" || got.Stop2 != "end_turn" || got.Stop3 != "cancelled" {
		t.Errorf("stop reasons %q %q %q, want end_turn end_turn cancelled", got.Stop1, got.Stop2, got.Stop3)
	}
	want := []string{"execute:allow_once,allow_session,allow_always,deny", "edit:allow_once,deny"}
	if !slices.Equal(got.Permissions, want) {
		t.Errorf("permission requests %q, want %q", got.Permissions, want)
	}
	if got.Answer1 != "done with step one" || got.Answer2 != "I removed build; the edit was refused" {
		t.Errorf("answers %q, %q", got.Answer1, got.Answer2)
	}
	if !strings.Contains(got.ReplayUser, "clean up the build") || !strings.Contains(got.ReplayUser, "what did you do?") ||
		!strings.Contains(got.ReplayAgent, "done with step one") || !slices.Contains(got.ReplayTools, "execute") || !slices.Contains(got.ReplayTools, "edit") {
		t.Errorf("replay: user %q, agent %q, tools %q", got.ReplayUser, got.ReplayAgent, got.ReplayTools)
	}
	if !slices.Contains(got.Listed, got.SessionID) {
		t.Errorf("session/list %q does not hold %s", got.Listed, got.SessionID)
	}
	// The second prompt carried the first turn to the model.
	if body := string(e.srv.Requests()[3].Body); !strings.Contains(body, "clean up the build") || !strings.Contains(body, "done with step one") {
		t.Errorf("second prompt lost the context: %s", body)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "build")); !os.IsNotExist(err) {
		t.Errorf("the allowed command did not run (build: %v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.workspace, "a.txt")); string(b) != "one\n" {
		t.Errorf("the denied edit was written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "finished")); err == nil {
		t.Errorf("the cancelled command ran to the end")
	}
	// Stored with source acp: the terminal lists it, and -c continues it.
	if res := e.mustRun("sessions", "list", "--source", "acp"); !strings.Contains(res.stdout, got.SessionID) {
		t.Errorf("hermes sessions list --source acp does not show %s:\n%s", got.SessionID, res)
	}
	if res := e.mustRun("chat", "-Q", "-c", "-q", "and now?"); !strings.Contains(res.stdout, "continued in the terminal") {
		t.Errorf("hermes -c: %s", res)
	}
	if body := string(e.srv.Requests()[5].Body); !strings.Contains(body, "clean up the build") {
		t.Errorf("hermes -c did not continue the ACP session: %s", body)
	}
}
