package box

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/protect"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(content, "->") {
			if err := os.Symlink(strings.TrimPrefix(content, "->"), p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Attacker trial 2 on issue 23, finding 5: box diff and box apply matched
// paths only, so a bare-layout repository, the takeover of the workspace
// root (.git/HEAD spoiled, HEAD, objects -> .git/objects, refs ->
// .git/refs and config at the top), a submodule's .git/modules/<name> and
// a hook in the host repository's core.hooksPath were applied unmarked.
func TestWorkspaceDiffMarksGitDirectoriesAndPointedPaths(t *testing.T) {
	ws, upper := t.TempDir(), t.TempDir()
	writeTree(t, ws, map[string]string{
		".git/HEAD":          "ref: refs/heads/main\n",
		".git/config":        "[core]\n\trepositoryformatversion = 0\n\thooksPath = .githooks\n",
		".git/objects/.keep": "",
		".git/refs/heads/.k": "",
		".githooks/.keep":    "",
	})
	evil := "[core]\n\tfsmonitor = \"touch /tmp/PWNED; false\"\n"
	writeTree(t, upper, map[string]string{
		"e/HEAD": "ref: refs/heads/main\n", "e/config": evil, "e/objects/.keep": "", "e/refs/heads/.k": "",
		".git/HEAD": "junk\n", "HEAD": "ref: refs/heads/main\n", "config": evil, "objects": "->.git/objects", "refs": "->.git/refs",
		".git/modules/lib/HEAD": "ref: refs/heads/main\n", ".git/modules/lib/config": evil,
		".git/modules/lib/objects/.keep": "", ".git/modules/lib/refs/heads/.k": "",
		".githooks/pre-commit": "#!/bin/sh\ntouch /tmp/PWNED\n",
		".git/config.worktree": evil,
		"src/main.go":          "package main\n",
	})
	m := &Manager{opts: Options{Terminal: config.TerminalConfig{ProtectedPaths: protect.Defaults()}}}
	changes, err := diffWorkspace(upper, ws)
	if err != nil {
		t.Fatal(err)
	}
	m.markProtected(ws, upper, changes)
	marked := map[string]string{}
	for _, c := range changes {
		marked[c.Path] = c.Protected
	}
	for _, p := range []string{"e/config", "config", ".git/modules/lib/config", ".githooks/pre-commit", ".git/config.worktree"} {
		if marked[p] == "" {
			t.Errorf("%s is not marked protected; changes: %v", p, marked)
		}
	}
	for _, p := range []string{"src/main.go", "e/objects/.keep"} {
		if marked[p] != "" {
			t.Errorf("%s is marked protected (%s)", p, marked[p])
		}
	}
}
