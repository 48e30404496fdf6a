package box

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/protect"
)

// boxHostGit runs git in dir on the host, with a HOME of its own.
func boxHostGit(t *testing.T, dir, home string, args ...string) string {
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

// Issue 23, attack 3 in a box with the bind workspace: a command writes
// core.fsmonitor into .git/config by redirection, installs
// .git/hooks/pre-commit, runs git config, or swaps .git away; the user's
// next `git status` and `git commit` on the host run none of it, while
// git add and commit inside the box still work and the files stay
// readable.
func TestBoxBindWorkspaceProtectedPaths(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitHome := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	e := startTestBox(t, func(o *Options) {
		ws := o.Terminal.Cwd
		boxHostGit(t, ws, gitHome, "init", "-q")
		boxHostGit(t, ws, gitHome, "config", "user.email", "u@example.com")
		boxHostGit(t, ws, gitHome, "config", "user.name", "u")
		if err := os.RemoveAll(filepath.Join(ws, ".git", "hooks")); err != nil { // created by the box
			t.Fatal(err)
		}
	})
	res := e.run(t, `cd `+e.workspace+` && export HOME=/tmp GIT_CONFIG_NOSYSTEM=1
printf '[core]\n\tfsmonitor = "touch `+marker+`; false"\n' >> .git/config; echo "config=$?"
mkdir -p .git/hooks; printf '#!/bin/sh\ntouch `+marker+`\n' > .git/hooks/pre-commit; echo "hook=$?"
git config core.hooksPath /tmp; echo "gitconfig=$?"
mv .git .git-old; echo "mv=$?"
grep -q user .git/config; echo "read=$?"
echo hello > a.txt && git add a.txt && git commit -q -m first && git branch side && git checkout -q side && git checkout -q - && echo committed`)
	out := string(res.Output)
	for _, want := range []string{"config=1", "hook=1", "mv=1", "read=0", "committed", "Read-only file system"} {
		if !strings.Contains(out, want) {
			t.Errorf("box output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gitconfig=0") {
		t.Errorf("git config wrote .git/config in the box:\n%s", out)
	}
	boxHostGit(t, e.workspace, gitHome, "status")
	boxHostGit(t, e.workspace, gitHome, "commit", "-q", "--allow-empty", "-m", "second")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git on the host ran code the box planted")
	}
	if got := boxHostGit(t, e.workspace, gitHome, "log", "--format=%s"); !strings.Contains(got, "first") {
		t.Errorf("the commit made in the box is missing:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, ".git", "hooks")); err != nil {
		t.Errorf(".git/hooks was not laid out for its mount: %v", err)
	}
}

// Attacker trial on issue 23 (bind workspace): .git/config and .git/hooks/
// are read-only in the box, but git reads its config from elsewhere too.
// The box writes .git/commondir naming a directory of its own (git then
// reads that directory's config instead of .git/config), or commits a
// nested repository as a gitlink (`git status` on the host recurses into
// it and reads sub/.git/config). The user's next `git status` on the host
// must run none of it.
func TestBoxBindWorkspaceGitConfigElsewhere(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitHome := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	e := startTestBox(t, func(o *Options) {
		ws := o.Terminal.Cwd
		boxHostGit(t, ws, gitHome, "init", "-q")
		boxHostGit(t, ws, gitHome, "config", "user.email", "u@example.com")
		boxHostGit(t, ws, gitHome, "config", "user.name", "u")
		boxHostGit(t, ws, gitHome, "commit", "-q", "--allow-empty", "-m", "init")
	})
	res := e.run(t, `cd `+e.workspace+` && export HOME=/tmp GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.com GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@example.com
git init -q sub && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch `+marker+`-gitlink; false"\n' > sub/.git/config
(cd sub && echo y > y && git add y && git commit -qm s) && git add sub 2>/dev/null && git commit -qm sub && echo gitlink
mkdir -p .git/evil && cp -r .git/refs .git/HEAD .git/evil/ && ln -s ../objects .git/evil/objects
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch `+marker+`-commondir; false"\n' > .git/evil/config
echo evil > .git/commondir && echo commondir`)
	t.Logf("box output:\n%s", res.Output)
	cmd := exec.Command("git", "status")
	cmd.Dir = e.workspace
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + gitHome, "GIT_CONFIG_NOSYSTEM=1"}
	_ = cmd.Run()
	// The new .git/commondir is moved aside on the host after the
	// command, which says so.
	if _, err := os.Stat(marker + "-commondir"); err == nil {
		t.Errorf("git status on the host ran code the box planted through .git/commondir")
	}
	if !strings.Contains(string(res.Output), protect.GitCommondirRefused) {
		t.Errorf("the command's output does not say .git/commondir was moved aside:\n%s", res.Output)
	}
	// The nested repository's config is moved aside on the host after
	// the command, which says so.
	if _, err := os.Stat(marker + "-gitlink"); err == nil {
		t.Errorf("git status on the host ran code the box planted in a nested repository (gitlink)")
	}
	if !strings.Contains(string(res.Output), "sub/.git/config"+protect.Refused) {
		t.Errorf("the command's output does not say sub/.git/config was moved aside:\n%s", res.Output)
	}
}

// Attacker trial on issue 23: box diff marked .git/config but not a nested
// repository's .git/config or a new .git/commondir, so box apply copied
// them onto the host without --allow-protected.
func TestWorkspaceDiffMarksNestedGitConfig(t *testing.T) {
	m := &Manager{opts: Options{Terminal: config.TerminalConfig{ProtectedPaths: protect.Defaults()}}}
	changes := []WorkspaceChange{
		{Path: "sub/.git/config", Kind: ChangeAdded},
		{Path: "a/b/.git/hooks/post-checkout", Kind: ChangeAdded},
		{Path: ".git/commondir", Kind: ChangeAdded},
		{Path: "sub/.git", Kind: ChangeAdded, IsDir: true},
		{Path: "sub/main.go", Kind: ChangeAdded},
	}
	m.markProtected(t.TempDir(), t.TempDir(), changes)
	for _, c := range changes[:4] {
		if c.Protected == "" {
			t.Errorf("%s is not marked protected", c.Path)
		}
	}
	if changes[4].Protected != "" {
		t.Errorf("sub/main.go is marked protected (%s)", changes[4].Protected)
	}
}

// Issue 23: protected names that do not exist when the box starts (no
// repository yet, no .envrc, no .vscode/) carry no read-only mount. What
// the box creates there is moved aside on the host after the command, and
// the output says so, while `git init` and `git commit` in the empty
// workspace keep working: a fresh repository runs nothing on the host.
func TestBoxBindWorkspaceProtectedNamesCreatedLater(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitHome := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	e := startTestBox(t, nil)
	const ident = `export HOME=/tmp GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.com GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@example.com`
	res := e.run(t, `cd `+e.workspace+` && `+ident+` && git init -q && echo a > a && git add a && git commit -qm first && echo committed`)
	if out := string(res.Output); !strings.Contains(out, "committed") || strings.Contains(out, protect.Refused) {
		t.Fatalf("git init and commit in an empty workspace must just work:\n%s", out)
	}
	res = e.run(t, `cd `+e.workspace+` && `+ident+`
git config core.fsmonitor "touch `+marker+`-fsmonitor; false"
printf '#!/bin/sh\ntouch `+marker+`-hook\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
echo 'touch `+marker+`-envrc' > .envrc
mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo planted`)
	out := string(res.Output)
	for _, want := range []string{"planted", ".git/config" + protect.Refused, ".git/hooks/pre-commit" + protect.Refused,
		".envrc" + protect.Refused, ".vscode" + protect.Refused} {
		if !strings.Contains(out, want) {
			t.Errorf("box output lacks %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{".envrc", ".vscode", ".git/hooks/pre-commit"} {
		if _, err := os.Lstat(filepath.Join(e.workspace, gone)); err == nil {
			t.Errorf("%s is still in the workspace on the host", gone)
		}
	}
	boxHostGit(t, e.workspace, gitHome, "status")
	boxHostGit(t, e.workspace, gitHome, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "host")
	if m, _ := filepath.Glob(marker + "*"); len(m) > 0 {
		t.Fatalf("git on the host ran code the box planted: %v", m)
	}
	// The repository stays usable in the box.
	res = e.run(t, `cd `+e.workspace+` && `+ident+` && echo b > b && git add b && git commit -qm second && git log --format=%s | tr '\n' ' '`)
	if out := string(res.Output); !strings.Contains(out, "second host first") {
		t.Errorf("the repository is not usable in the box after the check:\n%s", out)
	}
}
