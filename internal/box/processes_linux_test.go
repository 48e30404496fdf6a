package box

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// Processes sees what outlived its exec (nohup ... &), and
// TerminateProcesses ends it with SIGTERM, which it traps (issue 25: box
// stop's graceful half).
func TestTerminateProcessesReachesBackgroundedCommands(t *testing.T) {
	e := startTestBox(t, nil)
	b, err := e.m.Box(context.Background(), "test-task")
	if err != nil {
		t.Fatal(err)
	}
	if res := e.run(t, "nohup sh -c 'trap \"echo termed > termed; exit 0\" TERM; echo up > up; while :; do sleep 1; done' >/dev/null 2>&1 &"); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	// Once the trap is set (before, SIGTERM would end the shell at once).
	waitfor.Until(t, "the backgrounded shell to set its trap", func() bool {
		_, err := os.Stat(filepath.Join(e.workspace, "up"))
		return err == nil
	})
	procs, err := Processes(b.InitPID())
	if err != nil || len(procs) == 0 || slices.Contains(procs, b.InitPID()) {
		t.Fatalf("Processes = %v, %v; want the backgrounded shell, not the init", procs, err)
	}
	left, err := TerminateProcesses(b.InitPID(), 10*time.Minute)
	if err != nil || left != 0 {
		t.Fatalf("TerminateProcesses: %d left, %v", left, err)
	}
	if procs, _ := Processes(b.InitPID()); len(procs) != 0 {
		for _, p := range procs {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
			t.Errorf("still running after SIGTERM: %d %q", p, b)
		}
	}
	if res := e.run(t, "cat termed"); string(res.Output) != "termed\n" {
		t.Errorf("the trap did not run: %+v", res)
	}
}

// A pid in the caller's own pid namespace is no box's init (a dead init's
// pid reused on the host): Processes refuses it rather than list (and
// TerminateProcesses signal) every process of the host.
func TestProcessesRefusesHostNamespace(t *testing.T) {
	procs, err := Processes(os.Getpid())
	if !errors.Is(err, ErrNotBoxInit) {
		t.Fatalf("Processes(own pid) = %d pids, %v; want ErrNotBoxInit", len(procs), err)
	}
	if left, err := TerminateProcesses(os.Getpid(), 0); !errors.Is(err, ErrNotBoxInit) || left != 0 {
		t.Fatalf("TerminateProcesses(own pid) = %d, %v; want ErrNotBoxInit", left, err)
	}
}
