package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Attacker trial on issue 23: a guarded command (workspace-write, no
// approval asked) reads /proc/<pid>/environ of the user's other processes
// (the shell or wrapper that started hermes, a dev server) and gets the
// real value of a provider key; interleaving characters (sed 's/./&-/g')
// gets it past the output redactor to the model. hermes masks its own
// environ, but not its parent's. A guarded command must not read another
// process's environment outside its own sandbox.
func TestGuardedCommandCannotReadOtherProcessEnviron(t *testing.T) {
	needLandlock(t)
	if !hasSysAdmin() {
		t.Skip("the commands' PID namespace needs CAP_SYS_ADMIN (run as root); without it a guarded command still sees the host's /proc, as the README says")
	}
	const secret = "sk-ant-PARENTSECRET4242"
	victim := exec.Command("sleep", "300")
	victim.Env = []string{"ANTHROPIC_API_KEY=" + secret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	work := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work}
	b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return env }, Sandbox: SandboxWorkspaceWrite, Warn: &strings.Builder{},
		PIDInit: testExecutable(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), backend.ExecRequest{
		Command: "echo ran; tr '\\0' '\\n' < /proc/" + strconv.Itoa(victim.Process.Pid) + "/environ", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Output), "ran") {
		t.Fatalf("the command did not run: %+v", res)
	}
	if strings.Contains(string(res.Output), secret) {
		t.Fatalf("a guarded command read another process's secret environment:\n%s", res.Output)
	}
	// Its own processes are there: /proc works for the command itself.
	res, err = e.Exec(context.Background(), backend.ExecRequest{Command: "sleep 30 & echo bg=$!; cat /proc/self/status | grep -c '^Pid:'; ls /proc | grep -c '^[0-9]'; kill %1", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Output); !strings.Contains(out, "bg=") || res.ExitCode != 0 {
		t.Fatalf("/proc in the guarded command: %+v\n%s", res, out)
	}
	t.Logf("inside: %s", res.Output)
}

// A keeper killed from outside is replaced for the next command, which
// runs in a fresh namespace with its own /proc again.
func TestPIDNamespaceKeeperRestarts(t *testing.T) {
	needLandlock(t)
	if !hasSysAdmin() {
		t.Skip("the commands' PID namespace needs CAP_SYS_ADMIN (run as root)")
	}
	work := t.TempDir()
	b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return hostEnv() }, Warn: &strings.Builder{}, PIDInit: testExecutable(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	pid1 := func() string {
		t.Helper()
		res, err := e.Exec(context.Background(), backend.ExecRequest{Command: "tr '\\0' ' ' < /proc/1/cmdline", Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Output)
	}
	if got := pid1(); !strings.Contains(got, PIDInitArg) {
		t.Fatalf("PID 1 of the commands is not the keeper: %q", got)
	}
	b.guard.pids.mu.Lock()
	keeper := b.guard.pids.cmd.Process
	b.guard.pids.mu.Unlock()
	if err := keeper.Kill(); err != nil {
		t.Fatal(err)
	}
	if got := pid1(); !strings.Contains(got, PIDInitArg) {
		t.Fatalf("after the keeper was killed, PID 1 of the commands is %q", got)
	}
}

// A background process's PID is the one commands see: `kill PID` in a
// later command ends it.
func TestBackgroundPIDIsTheNamespacePID(t *testing.T) {
	needLandlock(t)
	if !hasSysAdmin() {
		t.Skip("the commands' PID namespace needs CAP_SYS_ADMIN (run as root)")
	}
	b, err := NewWithOptions(Options{Cwd: t.TempDir(), Environ: func() []string { return hostEnv() }, Warn: &strings.Builder{}, PIDInit: testExecutable(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	ready := &lineSignal{c: make(chan struct{})}
	p, err := e.Start(context.Background(), backend.ExecRequest{Command: "trap 'exit 7' TERM; echo $$; while :; do sleep 0.1; done", Output: ready})
	if err != nil {
		t.Fatal(err)
	}
	<-ready.c // the trap is set
	res, err := e.Exec(context.Background(), backend.ExecRequest{Command: "kill " + strconv.Itoa(p.PID()) + " && echo sent", Timeout: 30 * time.Second})
	if err != nil || !strings.Contains(string(res.Output), "sent") {
		t.Fatalf("kill %d from a later command: %v %s", p.PID(), err, res.Output)
	}
	got, err := p.Wait(context.Background())
	if err != nil || got.ExitCode != 7 || !strings.HasPrefix(string(got.Output), strconv.Itoa(p.PID())+"\n") {
		t.Fatalf("the background process did not end by its own trap: %+v %v", got, err)
	}
}

// lineSignal closes c at the first newline written to it.
type lineSignal struct {
	once sync.Once
	c    chan struct{}
}

func (l *lineSignal) Write(b []byte) (int, error) {
	if bytes.IndexByte(b, '\n') >= 0 {
		l.once.Do(func() { close(l.c) })
	}
	return len(b), nil
}
