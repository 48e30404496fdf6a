package main_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// Regression (issue 8): values and flags that used to be accepted and fail
// later (or be ignored) are refused at once with the key or flag at fault.
func TestBadValuesRefusedAtSetAndFlagParse(t *testing.T) {
	e := newE2E(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "set", "model.base_url", "not a url"}, "model.base_url"},
		{[]string{"config", "set", "toolsets", "[file, terminl]"}, "unknown toolset terminl"},
		{[]string{"chat", "-Q", "--max-turns", "-1", "-q", "hi"}, "--max-turns -1"},
		{[]string{"chat", "-Q", "--resume", "", "-q", "hi"}, `--resume ""`},
		{[]string{"-z", "hi", "--max-turns", "-1"}, "--max-turns -1"},
	} {
		res := e.run(tc.args...)
		if res.code == 0 || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("hermes %q: want failure naming %q\n%s", tc.args, tc.want, res)
		}
		if strings.Count(res.stderr, "hermes:") > 1 {
			t.Errorf("hermes %q: doubled prefix\n%s", tc.args, res)
		}
	}
	if len(e.srv.Requests()) != 0 {
		t.Errorf("a refused run reached the model")
	}
	e.mustRun("config", "set", "toolsets", "[file, terminal]")
	e.mustRun("config", "set", "model.base_url", "http://localhost:11434/v1")
}

// Regression (issue 8): `terminl:` in config.yaml only warned, the box
// setting under it was dropped and a --yolo run went to the host; `config
// check` said config OK. A close misspelling is now an error for every
// command that reads config; any unknown key fails `config check`; Hermes
// Agent keys this build ignores only warn.
func TestConfigTypoIsAnError(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "should not be asked"})
	e.configureModel()
	e.writeFile("../hermes-home/config.yaml", "model:\n  provider: openrouter\n  default: m\nterminl:\n  backend: box\n")
	for _, args := range [][]string{{"chat", "-Q", "--yolo", "-q", "hi"}, {"config", "check"}, {"config", "show"}, {"-z", "hi"}} {
		res := e.run(args...)
		if res.code == 0 || !strings.Contains(res.stderr, `did you mean "terminal"`) || !strings.Contains(res.stderr, ":4") {
			t.Errorf("hermes %q with terminl: in config.yaml:\n%s", args, res)
		}
	}
	if len(e.srv.Requests()) != 0 {
		t.Fatal("a run with a misspelled config key reached the model")
	}

	e.writeFile("../hermes-home/config.yaml", "model:\n  provider: openrouter\n  default: m\ncompletely_new_thing: 1\ndisplay:\n  tool_progress: all\n")
	res := e.run("config", "check")
	if res.code != 1 || !strings.Contains(res.stdout+res.stderr, "completely_new_thing") {
		t.Errorf("config check with an unknown key:\n%s", res)
	}
	e.writeFile("../hermes-home/config.yaml", "model:\n  provider: openrouter\n  default: m\ndisplay:\n  tool_progress: all\n")
	res = e.mustRun("chat", "-Q", "-q", "hi")
	if !strings.Contains(res.stderr, "warning") || !strings.Contains(res.stderr, "display") {
		t.Errorf("a Hermes Agent key this build ignores should warn:\n%s", res)
	}
	e.mustRun("config", "check")
}

// Regression (issue 8): read-only commands failed on a read-only
// HERMES_HOME (opening state.db for writing). The test mounts HERMES_HOME
// read-only in a private mount namespace (root only).
func TestSessionsListOnReadOnlyHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount")
	}
	e := newE2E(t, llmtest.Turn{Text: "stored answer"})
	e.configureModel()
	e.mustRun("chat", "-Q", "-q", "remember the walrus")
	script := `mount --bind "$HERMES_HOME" "$HERMES_HOME" && mount -o remount,ro,bind "$HERMES_HOME" && ` +
		`touch "$HERMES_HOME/probe" 2>/dev/null && { echo still writable >&2; exit 99; }; ` +
		`"$0" sessions list && "$0" sessions search walrus`
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script, hermesBin)
	cmd.Dir = e.workspace
	cmd.Env = append(e.baseEnv(), e.env...)
	out, err := cmd.CombinedOutput()
	if exitCode(err) == 99 || strings.Contains(string(out), "unshare failed") {
		t.Skipf("cannot make a read-only mount here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "remember the walrus") || !strings.Contains(string(out), "walrus") {
		t.Fatalf("read-only HERMES_HOME: %v\n%s", err, out)
	}
}
