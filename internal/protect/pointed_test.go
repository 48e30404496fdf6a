package protect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Attacker trial 2 (issue 23), finding 3: the user's repository sets
// core.hooksPath to a directory of the workspace (.githooks, husky's
// .husky/_). A command (no mount: an unprivileged local hermes) writes an
// executable pre-commit there; the user's next `git commit` would run it.
func TestWatchChecksTheHooksPathDirectory(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/HEAD":          "ref: refs/heads/master\n",
		".git/config":        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = .githooks\n",
		".git/objects/.keep": "",
		".git/refs/heads/.k": "",
		".githooks/.keep":    "",
	})
	w := New(Defaults()).Watch(ws, false)
	if err := os.WriteFile(filepath.Join(ws, ".githooks/pre-commit"), []byte("#!/bin/sh\ntouch /tmp/PWNED\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	note := w.Check()
	wantMovedAside(t, ws, note, ".githooks/pre-commit")
}

// Attacker trial 2 (issue 23), finding 3: the repository's hook is a link
// into the workspace (`ln -s ../../tools/pre-commit .git/hooks/pre-commit`,
// a common setup) and its config includes a workspace file (include.path).
// A command rewrites the link's target or the included file; the user's
// next `git commit` / `git status` would run it.
func TestWatchChecksHookLinkTargetsAndIncludedConfigs(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/HEAD":          "ref: refs/heads/master\n",
		".git/config":        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[include]\n\tpath = ../tools/git.conf\n",
		".git/objects/.keep": "",
		".git/refs/heads/.k": "",
		".git/hooks/.keep":   "",
		"tools/git.conf":     "[alias]\n\tst = status\n",
	})
	if err := os.WriteFile(filepath.Join(ws, "tools/pre-commit"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../tools/pre-commit", filepath.Join(ws, ".git/hooks/pre-commit")); err != nil {
		t.Fatal(err)
	}
	w := New(Defaults()).Watch(ws, false)
	if err := os.WriteFile(filepath.Join(ws, "tools/pre-commit"), []byte("#!/bin/sh\ntouch /tmp/PWNED\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "tools/git.conf"), []byte("[core]\n\tfsmonitor = \"touch /tmp/PWNED; false\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantMovedAside(t, ws, w.Check(), "tools/pre-commit", "tools/git.conf")
}

// Pointed names what the top-level repository points to in the
// workspace, for the read-only binds of a box or a guarded command; a
// path outside the workspace or in the user's home is not named.
func TestPointedNamesHooksPathIncludesAndHookTargets(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/HEAD":        "ref: refs/heads/master\n",
		".git/config":      "[core]\n\thooksPath = .husky/_\n[include]\n\tpath = ../tools/git.conf\n\tpath = ~/.gitconfig.local\n[includeIf \"onbranch:main\"]\n\tpath = /etc/gitconfig\n",
		".git/hooks/.keep": "",
		"tools/git.conf":   "[include]\n\tpath = more.conf\n",
		"tools/more.conf":  "",
	})
	if err := os.Symlink("../../tools/pre-commit", filepath.Join(ws, ".git/hooks/pre-commit")); err != nil {
		t.Fatal(err)
	}
	got := New(Defaults()).Pointed(ws)
	want := []string{".husky/_/", "tools/git.conf", "tools/more.conf", "tools/pre-commit"}
	if !slices.Equal(got, want) {
		t.Errorf("Pointed = %q, want %q", got, want)
	}
}
