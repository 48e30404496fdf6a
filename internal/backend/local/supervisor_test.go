package local

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// supervisorRunning reports whether the supervisor's /bin/sh was started.
func supervisorRunning(s *supervisor) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// A turn whose tools run no command (read_file, search) starts no
// supervisor: opening the environment costs no /bin/sh. The first command
// starts it, and the command's group is registered with it.
func TestSupervisorStartsWithFirstCommand(t *testing.T) {
	b, err := NewWithOptions(Options{Cwd: t.TempDir(), Supervise: true, Sandbox: SandboxOff})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env, err := b.Open(context.Background(), "task")
	if err != nil {
		t.Fatal(err)
	}
	if supervisorRunning(b.sup) {
		t.Fatal("opening the environment started the supervisor")
	}
	res, err := env.Exec(context.Background(), backend.ExecRequest{Command: "echo ok", Timeout: 20 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	if !supervisorRunning(b.sup) {
		t.Error("the first command did not start the supervisor")
	}
}
