package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// startOwner runs `hermes box exec -i --new TASK -- sh -c 'echo up; read
// x'` in the background until its returned func is called (which waits
// for it and returns its exit code and stderr).
func (c *boxCLI) startOwner(t *testing.T, task string) func() (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	var out, errb lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- c.runIO(pr, &out, &errb, "box", "exec", "-i", "--new", task, "--", "sh", "-c", "echo up; read x")
	}()
	for !strings.Contains(out.String(), "up") {
		if time.Now().After(waitfor.Deadline(t)) {
			pw.Close()
			t.Fatalf("owner did not start: %q %q", out.String(), errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop := func() (int, string) {
		pw.Write([]byte("\n"))
		pw.Close()
		select {
		case n := <-code:
			return n, errb.String()
		case <-time.After(time.Minute):
			t.Fatal("owner did not end")
			return -1, ""
		}
	}
	t.Cleanup(func() { pw.Close() })
	return stop
}

// Regression: box exec from another workspace attached to the running
// box and ran in the box's workspace (an rm there deleted the other
// project's file). It is refused, naming both workspaces.
func TestBoxCLIExecRefusesOtherWorkspace(t *testing.T) {
	c := newBoxCLI(t)
	marker := filepath.Join(c.ws, "marker")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(marker, []byte("x"), 0o644))
	stop := c.startOwner(t, "wsx")
	cfg := filepath.Join(c.home, "config.yaml")
	b, err := os.ReadFile(cfg)
	must(err)
	other := t.TempDir()
	must(os.WriteFile(cfg, []byte(strings.Replace(string(b), "cwd: "+c.ws, "cwd: "+other, 1)), 0o600))
	for _, args := range [][]string{{"box", "exec", "wsx", "--", "rm", "-v", "marker"}, {"box", "shell", "wsx"}} {
		_, errs, code := c.run(t, "rm -v marker\n", args...)
		if code == 0 || !strings.Contains(errs, c.ws) || !strings.Contains(errs, other) {
			t.Errorf("%v from workspace %s: code %d, stderr %q; want a refusal naming both workspaces", args, other, code, errs)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the box's workspace lost its file: %v", err)
	}
	if code, errs := stop(); code != 0 {
		t.Fatalf("owner: %d %s", code, errs)
	}
}

// Regression: a box exec attached to the box of another box exec died
// ("box stopped") when that one ended first. The owner now waits for it,
// and says so.
func TestBoxCLIOwnerWaitsForAttachedExec(t *testing.T) {
	c := newBoxCLI(t)
	var out, errb lockedBuffer
	owner := make(chan int, 1)
	go func() {
		owner <- c.runIO(strings.NewReader(""), &out, &errb, "box", "exec", "--new", "r1", "--", "sh", "-c", "echo up; sleep 1")
	}()
	for !strings.Contains(out.String(), "up") {
		if time.Now().After(waitfor.Deadline(t)) {
			t.Fatalf("owner did not start: %q %q", out.String(), errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, errs, code := c.run(t, "", "box", "exec", "r1", "--", "sh", "-c", "sleep 3; echo done")
	if code != 0 || got != "done\n" {
		t.Fatalf("attached exec: code %d, out %q, stderr %q; want it to run to its end", code, got, errs)
	}
	if code := <-owner; code != 0 || !strings.Contains(errb.String(), "waiting for 1 command") {
		t.Fatalf("owner: code %d, stderr %q; want it to say it waits for the attached command", code, errb.String())
	}
}

// Attacker trial (2026-12-06): a box exec that owns its box used to
// leave its workspace check to the box's stop, which waits for commands
// other hermes processes run in the box; a hermes that died while waiting
// (a closed terminal) checked nothing. The check now runs before the wait.
func TestBoxCLIOwnerChecksBeforeWaitingForAttached(t *testing.T) {
	c := newBoxCLI(t)
	var out, errb lockedBuffer
	owner := make(chan int, 1)
	plant := `mkdir -p sub/.git && printf '[core]\n\tfsmonitor = "echo PWNED"\n' > sub/.git/config`
	go func() {
		owner <- c.runIO(strings.NewReader(""), &out, &errb, "box", "exec", "--new", "w1", "--", "sh", "-c",
			plant+"; echo up; while [ ! -e attached ]; do sleep 0.05; done")
	}()
	waitfor.Until(t, "the owner's command to start", func() bool { return strings.Contains(out.String(), "up") })
	attached := make(chan int, 1)
	go func() {
		attached <- c.runIO(strings.NewReader(""), io.Discard, io.Discard, "box", "exec", "w1", "--", "sh", "-c",
			"touch attached; while [ ! -e release ]; do sleep 0.05; done")
	}()
	const waiting = "waiting for 1 command"
	waitfor.Until(t, "the owner to wait for the attached command", func() bool { return strings.Contains(errb.String(), waiting) })
	errs := errb.String()
	note := strings.Index(errs, "sub/.git/config"+protect.Refused)
	if note < 0 || note > strings.Index(errs, waiting) {
		t.Errorf("the owner's stderr does not name the config moved aside before it waits: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(c.ws, "sub", ".git", "config"+protect.Refused)); err != nil {
		t.Errorf("the planted config was not moved aside before the wait: %v", err)
	}
	if err := os.WriteFile(filepath.Join(c.ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-attached; code != 0 {
		t.Errorf("attached exec: code %d", code)
	}
	if code := <-owner; code != 0 {
		t.Errorf("owner: code %d, stderr %q", code, errb.String())
	}
}
