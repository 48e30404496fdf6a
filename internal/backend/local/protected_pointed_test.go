package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// Attacker trial 2 on issue 23, finding 3: the repository's own config
// points git at workspace files (core.hooksPath = .githooks, include.path
// = ../tools/git.conf, a hook linked to tools/pre-commit). A guarded
// command (root: mount namespace) must not be able to write them; the
// user's next `git commit` on the host runs nothing it planted.
func TestGuardProtectsFilesTheRepositoryConfigPointsTo(t *testing.T) {
	if !hasSysAdmin() {
		t.Skip("protected paths need CAP_SYS_ADMIN for the per-command mount namespace (run as root)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	home, work, marker := filepath.Join(root, "home"), filepath.Join(root, "home", "project"), filepath.Join(root, "ran")
	for _, d := range []string{".githooks", "tools"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hostGit(t, work, home, "init", "-q")
	hostGit(t, work, home, "config", "user.email", "u@example.com")
	hostGit(t, work, home, "config", "user.name", "u")
	hostGit(t, work, home, "config", "core.hooksPath", ".githooks")
	hostGit(t, work, home, "config", "include.path", "../tools/git.conf")
	if err := os.WriteFile(filepath.Join(work, "tools/git.conf"), []byte("[alias]\n\tst = status\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := openGuardedWorkspace(t, work, home, root)
	res, err := e.Exec(context.Background(), backend.ExecRequest{Timeout: 30 * time.Second, Command: `printf '#!/bin/sh\ntouch ` + marker + `\n' > .githooks/pre-commit; chmod +x .githooks/pre-commit; echo "hook=$?"
printf '[core]\n\tfsmonitor = "touch ` + marker + `; false"\n' >> tools/git.conf; echo "include=$?"`})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	for _, want := range []string{"hook=1", "include=1", "Read-only file system"} {
		if !strings.Contains(out, want) {
			t.Errorf("command output lacks %q:\n%s", want, out)
		}
	}
	hostGit(t, work, home, "status")
	hostGit(t, work, home, "commit", "-q", "--allow-empty", "-m", "second")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("git on the host ran code a guarded command planted:\n%s", out)
	}
}

// Attacker trial 2 on issue 23, finding 2: a command detaches a writer
// (`setsid nohup sh -c 'while :; do … >> lib/.git/config; done' &`) that
// puts core.fsmonitor back right after each check. As root, when hermes
// closes the backend the writer dies with the commands' PID namespace and
// the workspace is checked once more: nothing it wrote is left live.
func TestBackendCloseEndsDetachedWritersAndChecks(t *testing.T) {
	needLandlock(t)
	if !hasSysAdmin() {
		t.Skip("the commands' PID namespace needs CAP_SYS_ADMIN (run as root)")
	}
	work := t.TempDir()
	var person strings.Builder
	b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return hostEnv() }, Sandbox: SandboxWorkspaceWrite,
		ProtectedPaths: protect.Defaults(), Warn: &person, PIDInit: testExecutable(t)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = b.Close()
		}
	})
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	marker := "hermes-detached-writer-" + filepath.Base(work)
	res, err := e.Exec(context.Background(), backend.ExecRequest{Timeout: 30 * time.Second, Command: `setsid nohup sh -c 'while :; do mkdir -p lib/.git; grep -qs fsmonitor lib/.git/config || printf "[core]\n\tfsmonitor = \"true ` + marker + `\"\n" >> lib/.git/config; sleep .02; done' </dev/null >/dev/null 2>&1 &`})
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the detached writer to set core.fsmonitor after the command's check", func() bool {
		data, _ := os.ReadFile(filepath.Join(work, "lib/.git/config"))
		return strings.Contains(string(data), "fsmonitor")
	})
	closed = true
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := processesWith(t, marker); len(pids) > 0 {
		for _, pid := range pids { // the test's own writer: end it before failing
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		t.Fatalf("the detached writer outlived the backend: pids %v\n%s", pids, res.Output)
	}
	if data, err := os.ReadFile(filepath.Join(work, "lib/.git/config")); err == nil && strings.Contains(string(data), "fsmonitor") {
		t.Fatalf("lib/.git/config sets core.fsmonitor after Close:\n%s\nperson: %s", data, person.String())
	}
	if _, err := os.Stat(filepath.Join(work, "lib/.git/config"+protect.Refused)); err != nil {
		t.Errorf("the last check did not move lib/.git/config aside: %v\nperson: %s", err, person.String())
	}
}

// processesWith returns the host PIDs whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.Contains(string(cmd), s) {
			out = append(out, e.Name())
		}
	}
	return out
}
