package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/protect"
)

// hostGit runs git in dir on the host (outside every guard), with a HOME of
// its own so the test machine's ~/.gitconfig plays no part.
func hostGit(t *testing.T, dir, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("host git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Issue 23, attack 3 on the local backend: a guarded command writes
// core.fsmonitor into .git/config by plain redirection, installs
// .git/hooks/pre-commit, or swaps .git for one of its own; the user's next
// `git status` and `git commit` on the host must run none of it. Reads of
// the protected files and git add/commit inside the command still work.
func TestGuardProtectedPathsKeepGitFromRunningCode(t *testing.T) {
	if !hasSysAdmin() {
		t.Skip("protected paths need CAP_SYS_ADMIN for the per-command mount namespace (run as root)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	home, work, marker := filepath.Join(root, "home"), filepath.Join(root, "home", "project"), filepath.Join(root, "ran")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	hostGit(t, work, home, "init", "-q")
	hostGit(t, work, home, "config", "user.email", "u@example.com")
	hostGit(t, work, home, "config", "user.name", "u")
	e := openGuardedWorkspace(t, work, home, root)
	run := func(command string) string {
		t.Helper()
		res, err := e.Exec(context.Background(), backend.ExecRequest{Command: command, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Output)
	}
	out := run(`printf '[core]\n\tfsmonitor = "touch ` + marker + `; false"\n' >> .git/config; echo "config=$?"
printf '#!/bin/sh\ntouch ` + marker + `\n' > .git/hooks/pre-commit; echo "hook=$?"
git config core.hooksPath /tmp; echo "gitconfig=$?"
echo '[core] fsmonitor = evil' > .gitconfig; echo "rc=$?"
mv .git .git-old; echo "mv=$?"
grep -c '\[core\]' .git/config >/dev/null; echo "read=$?"
echo hello > a.txt && git add a.txt && git commit -q -m first && echo committed`)
	for _, want := range []string{"config=1", "hook=1", "gitconfig=", "mv=1", "read=0", "committed"} {
		if !strings.Contains(out, want) {
			t.Errorf("command output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gitconfig=0") {
		t.Errorf("git config wrote .git/config:\n%s", out)
	}
	if !strings.Contains(out, "Read-only file system") {
		t.Errorf("the writes must fail with EROFS:\n%s", out)
	}
	// The command may also try the same thing in a background shell that
	// outlives it: its namespace keeps the paths read-only.
	hostGit(t, work, home, "status")
	hostGit(t, work, home, "commit", "-q", "--allow-empty", "-m", "second")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git on the host ran code a guarded command planted")
	}
	if got := hostGit(t, work, home, "log", "--format=%s"); !strings.Contains(got, "first") {
		t.Errorf("the commit made by the command is missing:\n%s", got)
	}
	// The host itself (hermes's own process) still writes the files.
	if err := os.WriteFile(filepath.Join(work, ".gitconfig"), []byte("# host\n"), 0o644); err != nil {
		t.Fatalf("the host lost write access: %v", err)
	}
}

// BenchmarkProtectedMounts is what terminal.protected_paths adds to each
// command's start on the guard's thread: a mount namespace, the workspace
// bind and the read-only binds of a repository's .git/config, .git/hooks
// and .git/info (go test -bench ProtectedMounts, as root).
func BenchmarkProtectedMounts(b *testing.B) {
	if !hasSysAdmin() {
		b.Skip("needs CAP_SYS_ADMIN")
	}
	ws := b.TempDir()
	for _, d := range []string{".git/hooks", ".git/info"} {
		_ = os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	_ = os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	g := newGuard(SandboxWorkspaceWrite, 0, "", []string{ws})
	g.setProtected(protect.Defaults(), ws, true, &strings.Builder{})
	b.ResetTimer()
	for range b.N {
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the namespace ends with the thread
			done <- g.mountProtected()
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// Attacker trial on issue 23: .git/config and .git/hooks/ are read-only,
// but git takes its config (and hooks) from elsewhere too. A guarded
// command (1) writes .git/commondir naming a directory of its own, whose
// config git then reads instead of .git/config, or (2) commits a nested
// repository as a gitlink: `git status` on the host recurses into it and
// reads its config (core.fsmonitor). Neither needs an approval today; the
// user's next `git status` on the host must run none of it.
func TestGuardProtectedPathsGitConfigElsewhere(t *testing.T) {
	if !hasSysAdmin() {
		t.Skip("protected paths need CAP_SYS_ADMIN for the per-command mount namespace (run as root)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for name, attack := range map[string]string{
		"commondir": `mkdir -p .git/evil && cp -r .git/refs .git/HEAD .git/evil/ && ln -s ../objects .git/evil/objects
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch MARKER; false"\n' > .git/evil/config
echo evil > .git/commondir`,
		"gitlink": `mkdir -p t && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch MARKER; false"\n' > t/config
git init -q --template=t sub && cd sub && echo y > y && git add y && git commit -qm s && cd .. && git add sub && git commit -qm sub`,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			home, work, marker := filepath.Join(root, "home"), filepath.Join(root, "home", "project"), filepath.Join(root, "ran")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			hostGit(t, work, home, "init", "-q")
			hostGit(t, work, home, "config", "user.email", "u@example.com")
			hostGit(t, work, home, "config", "user.name", "u")
			hostGit(t, work, home, "commit", "-q", "--allow-empty", "-m", "init")
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + root, "GIT_CONFIG_NOSYSTEM=1",
				"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.com"}
			b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return env }, Sandbox: SandboxWorkspaceWrite,
				ProtectedPaths: protect.Defaults(), Warn: &strings.Builder{}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			e, err := b.Open(context.Background(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Exec(context.Background(), backend.ExecRequest{Command: strings.ReplaceAll(attack, "MARKER", marker), Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// The command's own git may run the setting inside the guard;
			// what counts is the host's git afterwards.
			_ = os.Remove(marker)
			cmd := exec.Command("git", "status")
			cmd.Dir = work
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
			_ = cmd.Run()
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("git status on the host ran code a guarded command planted:\n%s", res.Output)
			}
			want := map[string]string{"commondir": protect.GitCommondirRefused, "gitlink": "sub/.git/config" + protect.Refused}[name]
			if !strings.Contains(string(res.Output), want) {
				t.Errorf("the command's output does not say %s was moved aside:\n%s", want, res.Output)
			}
		})
	}
}

// openGuardedWorkspace opens a session of a guarded local backend
// (workspace-write, the default protected paths) in work, with HOME home,
// TMPDIR root and no system git config; it closes when the test ends.
func openGuardedWorkspace(t *testing.T, work, home, root string) backend.Environment {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + root, "GIT_CONFIG_NOSYSTEM=1"}
	b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return env }, Sandbox: SandboxWorkspaceWrite,
		ProtectedPaths: protect.Defaults(), Warn: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	return e
}
