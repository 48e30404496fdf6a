package box

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Regression: a command sent over an attached connection just as the
// owner began stopping the box was refused with "the box is stopping",
// an error its caller did not take for ErrNotRunning: it failed instead
// of starting the box afresh. Here the owner drains between the attach
// and the command.
func TestCommandRefusedByStoppingOwnerRunsInFreshBox(t *testing.T) {
	e := startTestBox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m2, err := NewManager(e.m.opts)
	must(t, err)
	t.Cleanup(func() { m2.Close() })
	env2, err := m2.Open(ctx, "test-task")
	must(t, err)
	if b, err := m2.Box(ctx, "test-task"); err != nil || !b.Attached() {
		t.Fatalf("second manager: %v, attached %v; want it attached to the first's box", err, err == nil && b.Attached())
	}
	// A command of its own on the attached connection is refused, as
	// not running, once the owner drains.
	a, err := Attach(ctx, e.home, "test-task")
	must(t, err)
	defer a.Close()
	owner, err := e.m.Box(ctx, "test-task")
	must(t, err)
	must(t, owner.WaitAttached(ctx, nil))
	if _, err := a.Command(ctx, Command{Argv: []string{"true"}}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("command on an attached connection of a draining box: %v; want ErrNotRunning", err)
	}
	type result struct {
		res backend.ExecResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := env2.Exec(ctx, backend.ExecRequest{Command: "echo ok"})
		done <- result{res, err}
	}()
	time.Sleep(300 * time.Millisecond) // the command meets the draining box first
	must(t, e.m.Stop("test-task"))
	r := <-done
	if r.err != nil || trimmed(r.res) != "ok" {
		t.Fatalf("command while the owner stopped the box: %v, %q; want it run in a fresh box", r.err, trimmed(r.res))
	}
	if b, err := m2.Box(ctx, "test-task"); err != nil || b.Attached() {
		t.Errorf("second manager after the owner stopped: %v; want it running the box itself", err)
	}
}

// Regression: an init that accepted an attach and ended before answering
// the hello (its owner stopping the box) failed the attach with
// "connection reset by peer" instead of ErrNotRunning, and the command
// did not start the box afresh.
func TestAttachHungUpBeforeHelloStartsFreshBox(t *testing.T) {
	needBoxes(t)
	home, ws := t.TempDir(), t.TempDir()
	path := AttachSocketPath(home, "test-task")
	must(t, os.MkdirAll(filepath.Dir(path), 0o700))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	must(t, err)
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	go hangUpEach(ln)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Attach(ctx, home, "test-task"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("attach to an init that hangs up: %v; want ErrNotRunning", err)
	}
	m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(ws), Home: home})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	env, err := m.Open(ctx, "test-task")
	must(t, err)
	res, err := env.Exec(ctx, backend.ExecRequest{Command: "echo ok"})
	if err != nil || strings.TrimSpace(string(res.Output)) != "ok" {
		t.Fatalf("command: %v, %q; want it run in a fresh box", err, res.Output)
	}
	if b, err := m.Box(ctx, "test-task"); err != nil || b.Attached() {
		t.Errorf("box: %v; want one this manager runs", err)
	}
}
