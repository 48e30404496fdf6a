package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// plantFsmonitor is a box command that plants a nested repository whose
// config makes the user's next `git status` there run a command.
const plantFsmonitor = `mkdir -p sub/.git && printf '[core]\n\tfsmonitor = "echo PWNED"\n' > sub/.git/config`

// Attacker trial (2026-12-06): `hermes box exec … | head -1` ended hermes
// with SIGPIPE once head had its line, and a closed terminal with SIGHUP,
// both before the workspace check at the box's stop; the next start then
// took the planted config for the user's own and `git status` on the host
// ran it. Now either signal stops the command as SIGINT does, and the box
// stops checked: the config is moved aside and the person told.
func TestBoxExecIsCheckedWhenHermesGetsSIGPIPEOrSIGHUP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	for _, tc := range []struct {
		name, script string
		// after reads hermes's first output line, then makes it get
		// the signal.
		after func(cmd *exec.Cmd, out *os.File)
	}{
		{"sigpipe", plantFsmonitor + "; echo ready; exec yes", func(_ *exec.Cmd, out *os.File) {
			out.Close() // the reader leaves, as head -1 does
		}},
		{"sighup", plantFsmonitor + "; echo ready; exec sleep 600", func(cmd *exec.Cmd, _ *os.File) {
			cmd.Process.Signal(syscall.SIGHUP)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			cmd, r, stderr := startBoxExecUntilReady(t, e, tc.name, tc.script)
			tc.after(cmd, r)
			err := cmd.Wait()
			r.Close()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					t.Fatalf("hermes died of %v before its checks; stderr %s", ws.Signal(), stderr)
				}
			}
			if tc.name == "sigpipe" {
				// Quietly, as a pipeline's writer whose reader left (a new
				// user's trial: `box exec T -- yes | head` said "killed by
				// SIGTERM" and exited 143).
				if !errors.As(err, &exit) || exit.ExitCode() != 141 || strings.Contains(stderr.String(), "killed by") {
					t.Errorf("after SIGPIPE: %v, stderr %q; want exit status 141 and no report of the command's end", err, stderr)
				}
			}
			config := filepath.Join(e.workspace, "sub", ".git", "config")
			if _, err := os.Stat(config + protect.Refused); err != nil {
				t.Errorf("the planted config was not moved aside: %v", err)
			}
			if _, err := os.Stat(config); err == nil {
				t.Errorf("the planted config is still in place")
			}
			if !strings.Contains(stderr.String(), "sub/.git/config"+protect.Refused) {
				t.Errorf("stderr does not name the config moved aside: %q", stderr)
			}
		})
	}
}

// Attacker trial (2026-12-06), the case no signal handler covers: hermes
// is killed (SIGKILL, a crash) while a box command that planted a config
// runs. Its box keeps the baseline of its start until its stop checked
// the workspace; the next start of the box resumes it and moves the
// planted config aside before any command, instead of taking it for the
// user's own.
func TestBoxStartAfterKilledHermesChecksWhatItsCommandsLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t)
	cmd, r, _ := startBoxExecUntilReady(t, e, "killed", plantFsmonitor+"; echo ready; exec sleep 600")
	r.Close()
	cmd.Process.Kill()
	cmd.Wait()
	config := filepath.Join(e.workspace, "sub", ".git", "config")
	if _, err := os.Stat(config); err != nil {
		t.Fatalf("the planted config should still be there after the kill: %v", err)
	}
	res := e.run("box", "exec", "killed", "--", "true")
	if res.code != 0 {
		t.Fatalf("the next box exec: %s", res)
	}
	if _, err := os.Stat(config + protect.Refused); err != nil {
		t.Errorf("the planted config was not moved aside by the next start: %v\n%s", err, res)
	}
	if !strings.Contains(res.stderr, "sub/.git/config"+protect.Refused) {
		t.Errorf("the next start does not name the config moved aside: %s", res)
	}
	// A clean stop leaves no baseline behind: the start after it takes the
	// workspace as it is (the user's own change is not moved).
	if res := e.run("box", "exec", "killed", "--", "true"); res.code != 0 || strings.Contains(res.stderr, protect.Refused) {
		t.Errorf("the start after a clean stop: %s", res)
	}
}

// `hermes box rm` after a killed hermes checks the workspace against the
// baseline the killed start left, as the next start would, before that
// baseline goes with the box's state (it dropped it: what the killed
// session's commands planted stayed, unchecked, for good).
func TestBoxRmAfterKilledHermesChecksWhatItsCommandsLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t)
	cmd, r, _ := startBoxExecUntilReady(t, e, "killed-rm", plantFsmonitor+"; echo ready; exec sleep 600")
	r.Close()
	cmd.Process.Kill()
	cmd.Wait()
	config := filepath.Join(e.workspace, "sub", ".git", "config")
	res := e.run("box", "rm", "killed-rm")
	if res.code != 0 {
		t.Fatalf("box rm: %s", res)
	}
	if _, err := os.Stat(config + protect.Refused); err != nil {
		t.Errorf("box rm did not move the planted config aside: %v\n%s", err, res)
	}
	if !strings.Contains(res.stderr, "sub/.git/config"+protect.Refused) {
		t.Errorf("box rm does not name the config moved aside: %s", res)
	}
}

// startBoxExecUntilReady starts `hermes box exec --new task -- sh -c
// script` with its stdout on a pipe and returns once it printed "ready":
// the command, the pipe's read end and hermes's stderr. The box is
// removed when the test ends.
func startBoxExecUntilReady(t *testing.T, e *e2e, task, script string) (*exec.Cmd, *os.File, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	t.Cleanup(cancel)
	cmd, _, stderr := e.command(ctx, nil, "box", "exec", "--new", task, "--", "sh", "-c", script)
	t.Cleanup(func() { e.run("box", "rm", task) })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("first line %q, %v; stderr %s", line, err, stderr)
	}
	return cmd, r, stderr
}
