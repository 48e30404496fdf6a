package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/procident"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// victimNamespace starts sh as the init of a pid namespace of its own
// with one sleep in it, standing in for a process that reused a dead box
// init's pid; it returns sh's and the sleep's host pids.
func victimNamespace(t *testing.T) (int, procident.Process) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 100000 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Skipf("a pid namespace: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	var child int
	waitfor.Until(t, "the victim's sleep to start", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return false
		}
		child, _ = strconv.Atoi(f[0])
		return true
	})
	start, _, err := procident.StartTime(child)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	return pid, procident.Process{PID: child, StartTime: start}
}

// A started box whose init is killed from the host (as the OOM killer
// does to an init whose box filled its tmpfs) leaves a record naming a
// pid another process may reuse: box stop must not signal the processes
// of whatever namespace that pid is in, and the box ends (record and
// owner gone). The attacker trial's F1.
func TestBoxStopAfterInitKilledSignalsNothingOutside(t *testing.T) {
	c := newBoxCLI(t)
	victim, sleeper := victimNamespace(t)
	task := "initdead-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	if out, errs, code := c.runDetaching(t, "box", "start", "--idle", "0", task); code != 0 {
		t.Fatalf("box start: code %d %q %s", code, out, errs)
	}
	path := startedPath(c.home, task)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec startedBox
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	owner := rec.owner()
	t.Cleanup(func() { syscall.Kill(owner.PID, syscall.SIGKILL) })
	if err := syscall.Kill(rec.InitPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The dead init's pid now names the victim (pid reuse, made certain).
	rec.InitPID = victim
	if err := os.WriteFile(path, mustJSON(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := c.run(t, "", "box", "stop", "--timeout", "5m", task)
	if code != 0 && !strings.Contains(errs, "not running") {
		t.Errorf("box stop: code %d %q %s", code, out, errs)
	}
	if !sleeper.Alive() {
		t.Fatalf("box stop signalled a process outside the box (pid %d, in the namespace of pid %d)", sleeper.PID, victim)
	}
	waitfor.Until(t, "the owner to exit", func() bool { return !owner.Alive() })
	waitfor.Until(t, "the record to go", func() bool { _, err := os.Stat(path); return os.IsNotExist(err) })
}

// The owner of a started box notices its init's death at once (not on an
// --idle tick: here there is none) and ends, removing its record.
func TestBoxStartOwnerEndsWhenInitKilled(t *testing.T) {
	c := newBoxCLI(t)
	task := "initkill-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	if out, errs, code := c.runDetaching(t, "box", "start", "--idle", "0", task); code != 0 {
		t.Fatalf("box start: code %d %q %s", code, out, errs)
	}
	rec, ok := readStartedBox(c.home, task)
	if !ok || rec.InitStartTime == 0 {
		t.Fatalf("record %+v (owner alive %v): want the init's start time", rec, ok)
	}
	owner := rec.owner()
	t.Cleanup(func() { syscall.Kill(owner.PID, syscall.SIGKILL) })
	if err := syscall.Kill(rec.InitPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the owner to exit", func() bool { return !owner.Alive() })
	if _, err := os.Stat(startedPath(c.home, task)); !os.IsNotExist(err) {
		t.Errorf("record left: %v", err)
	}
}
