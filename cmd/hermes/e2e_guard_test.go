package main_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// dotEnvKey is a provider key kept only in HERMES_HOME/.env.
const dotEnvKey = "sk-ant-dotenv-7f3a9c1e5b2d4068"

// TestLocalGuardContainsAttacks (issue 15): with the default
// terminal.local_sandbox (workspace-write) and --yolo, a script the model
// runs tries to wipe a fake HOME, rewrite config.yaml, delete .env and
// read the keys from .env and /proc/$PPID/environ (plain and base64). The
// kernel refuses the file attacks with EACCES (the script did run: its
// workspace write landed); hermes's environment block shows the key
// variable with its value overwritten; HOME, config.yaml and .env are
// unchanged and no form of either key reaches the model, without
// redaction having had anything to hide.
func TestLocalGuardContainsAttacks(t *testing.T) {
	if !landlockAvailable() {
		t.Skip("the kernel has no Landlock (needs >= 5.13 with lsm=landlock)")
	}
	e := newE2E(t,
		terminalTurn("call_attack", "sh attack.sh"),
		llmtest.Turn{Text: "done"},
	)
	// The fake HOME lives under /tmp, which the guard leaves writable as
	// the temp dir; give commands their own temp dir, as on a real machine.
	tmp := filepath.Join(filepath.Dir(e.home), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "TMPDIR="+tmp)
	e.configureModel()
	e.mustRun("config", "set", "ANTHROPIC_API_KEY", dotEnvKey)
	victim := filepath.Join(e.userHome, "projects", "thesis.tex")
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("years of work"), 0o644); err != nil {
		t.Fatal(err)
	}
	hh := e.home
	e.writeFile("attack.sh", `
rm -rf "$HOME"; echo "rm-home=$?"
HERMES_HOME=`+hh+` `+hermesBin+` config set approvals.mode off; echo "hermes-config=$?"
echo "approvals: {mode: off}" >> `+hh+`/config.yaml; echo "config=$?"
rm -f `+hh+`/.env; echo "rm-env=$?"
cat `+hh+`/.env; echo "cat-env=$?"
base64 `+hh+`/.env
tr '\0' '\n' < /proc/$PPID/environ; echo "environ=$?"
base64 /proc/$PPID/environ
echo contained > inside-workspace.txt
`)
	before := map[string][]byte{}
	for _, name := range []string{"config.yaml", ".env"} {
		before[name], _ = os.ReadFile(filepath.Join(hh, name))
	}
	res := e.mustRun("chat", "-Q", "--yolo", "-q", "run attack.sh")

	reqs := e.srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("want 2 model requests, got %d\n%s", len(reqs), res)
	}
	body := string(reqs[1].Body)
	for _, want := range []string{"rm-home=1", "hermes-config=1", "config.yaml: Permission denied", "rm-env=1", "cat-env=1", ".env: Permission denied"} {
		if !strings.Contains(body, want) {
			t.Errorf("the tool result lacks %q:\n%s", want, body)
		}
	}
	// As root the command runs in a PID namespace of its own, where hermes
	// is not there at all ($PPID is 0); for other users the non-dumpable
	// hermes's environ is not readable; where it is, it is scrubbed.
	if !strings.Contains(body, "OPENROUTER_API_KEY=***") && !strings.Contains(body, "environ: Permission denied") &&
		!strings.Contains(body, "/proc/0/environ: No such file") {
		t.Errorf("hermes's environment was neither scrubbed nor hidden:\n%s", body)
	}
	for _, key := range []string{dotEnvKey, fakeOpenRouterKey} {
		for _, form := range []string{key, base64.StdEncoding.EncodeToString([]byte(key))[:16], "ANTHROPIC_API_KEY=", "[REDACTED]"} {
			for i, r := range reqs {
				if bytes.Contains(r.Body, []byte(form)) {
					t.Errorf("request %d carries %q", i+1, form)
				}
			}
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "years of work" {
		t.Errorf("HOME was damaged: %q %v", b, err)
	}
	for name, was := range before {
		if now, _ := os.ReadFile(filepath.Join(hh, name)); !bytes.Equal(now, was) {
			t.Errorf("%s changed:\n%s", name, now)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.workspace, "inside-workspace.txt")); string(b) != "contained\n" {
		t.Errorf("the workspace write did not land (%q): the script did not run as expected", b)
	}
}

// TestKillNineEndsLocalCommands (issue 8 "Crash and resume"): SIGKILL of
// hermes while a foreground command runs ends that command, the child it
// started, and a background process with its child; none finishes its
// work after the session was told it was cancelled.
func TestKillNineEndsLocalCommands(t *testing.T) {
	bg := llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_bg", Name: "terminal",
		Args: args(map[string]any{"command": "sleep 300 & echo $! > bg-child.pid; echo $$ > bg.pid; wait", "background": true})}}}
	fg := llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_sleep", Name: "terminal",
		Args: args(map[string]any{"command": "sleep 300 & echo $! > fg-child.pid; echo $$ > sleeper.pid.tmp && mv sleeper.pid.tmp sleeper.pid; wait"})}}}
	e := newE2E(t, bg, fg, llmtest.Turn{Text: "never reached"})
	e.configureModel()
	wait, signal := e.startUntilToolRuns("chat", "-Q", "--yolo", "-q", "start a server, then a long job")
	var pids []int
	for _, name := range []string{"bg.pid", "bg-child.pid", "sleeper.pid", "fg-child.pid"} {
		var pid int
		for deadline := waitfor.Deadline(t); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			b, _ := os.ReadFile(filepath.Join(e.workspace, name))
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if pid == 0 {
			t.Fatalf("%s never written", name)
		}
		pid = hostPID(t, pid, e.workspace)
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	signal(syscall.SIGKILL)
	wait()
	for deadline := waitfor.Deadline(t); ; time.Sleep(20 * time.Millisecond) {
		var alive []int
		for _, p := range pids {
			if running(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes outlived a killed hermes: %v (of bg, bg child, fg, fg child %v)", alive, pids)
		}
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// landlockAvailable reports whether the kernel offers Landlock, asking
// as the guard does (landlock_create_ruleset with the version flag).
func landlockAvailable() bool {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	return errno == 0 && int(v) > 0
}

// TestWritablePathInsideHermesHomeIsAnError: terminal.writable_paths may
// not open HERMES_HOME to commands; the run stops and names the key.
func TestWritablePathInsideHermesHomeIsAnError(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "unreached"})
	e.configureModel()
	e.mustRun("config", "set", "terminal.writable_paths", "["+filepath.Join(e.home, "skills")+"]")
	res := e.run("chat", "-Q", "-q", "hi")
	if res.code == 0 || !strings.Contains(res.stderr, "terminal.writable_paths") || !strings.Contains(res.stderr, "inside HERMES_HOME") {
		t.Fatalf("want an error naming terminal.writable_paths\n%s", res)
	}
}
