package local

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	t.Skip("known limitation: on this kernel (6.18) Landlock does not refuse a guarded command /proc/PID/environ of a same-user process outside its domain although CAP_SYS_PTRACE is dropped; a PID namespace with its own /proc needs a re-exec helper as PID 1; see the README local guard (attack23 F3)")
	needLandlock(t)
	const secret = "sk-ant-PARENTSECRET4242"
	victim := exec.Command("sleep", "300")
	victim.Env = []string{"ANTHROPIC_API_KEY=" + secret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	work := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work}
	b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return env }, Sandbox: SandboxWorkspaceWrite, Warn: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), backend.ExecRequest{
		Command: "tr '\\0' '\\n' < /proc/" + strconv.Itoa(victim.Process.Pid) + "/environ", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Output), secret) {
		t.Fatalf("a guarded command read another process's secret environment:\n%s", res.Output)
	}
}
