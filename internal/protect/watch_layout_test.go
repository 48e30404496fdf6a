package protect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const evilConfig = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch /tmp/PWNED; false\"\n"

func symlinks(t *testing.T, ws string, links [][2]string) {
	t.Helper()
	for _, l := range links {
		if err := os.Symlink(l[0], filepath.Join(ws, l[1])); err != nil {
			t.Fatal(err)
		}
	}
}

func wantMovedAside(t *testing.T, ws, note string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		if _, err := os.Lstat(filepath.Join(ws, rel+Refused)); err != nil {
			t.Errorf("%s was not moved aside: %v\nnote: %s", rel, err, note)
		}
	}
}

// Attacker trial 2 (issue 23), finding 1: a bare layout whose objects/
// or refs/ is a link to a directory is a repository for git (access(2)
// follows the link), so `git status` there runs its core.fsmonitor.
func TestWatchBareLayoutWithLinkedObjectsOrRefs(t *testing.T) {
	ws := t.TempDir()
	w := New(Defaults()).Watch(ws, false)
	writeFiles(t, ws, map[string]string{
		"F/HEAD":          "ref: refs/heads/master\n",
		"F/config":        evilConfig,
		"F.o/.keep":       "",
		"F.r/heads/.keep": "",
		"L/HEAD":          "ref: refs/heads/master\n",
		"L/config":        evilConfig,
		"L/objects/.keep": "",
		"L.r/heads/.keep": "",
	})
	symlinks(t, ws, [][2]string{{"../F.o", "F/objects"}, {"../F.r", "F/refs"}, {"../L.r", "L/refs"}})
	wantMovedAside(t, ws, w.Check(), "F/config", "L/config")
}

// Attacker trial 2, finding 1 (takeover): the top-level .git/config and
// hooks are read-only, but .git/HEAD is not: `echo junk > .git/HEAD`
// makes git skip .git, and a HEAD, objects -> .git/objects, refs ->
// .git/refs and config at the workspace root make the root itself the
// repository the user's plain `git status` uses.
func TestWatchWorkspaceRootTakeover(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/HEAD":          "ref: refs/heads/main\n",
		".git/config":        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
		".git/objects/.keep": "",
		".git/refs/heads/.k": "",
		"src/main.go":        "package main\n",
	})
	w := New(Defaults()).Watch(ws, true)
	writeFiles(t, ws, map[string]string{".git/HEAD": "junk\n", "HEAD": "ref: refs/heads/main\n", "config": evilConfig})
	symlinks(t, ws, [][2]string{{".git/objects", "objects"}, {".git/refs", "refs"}, {".git/index", "index"}})
	wantMovedAside(t, ws, w.Check(), "config")
}

// A directory with HEAD and a commondir is a git directory too (a linked
// worktree's): git reads objects, refs and config from the directory
// commondir names.
func TestWatchHeadWithCommondirIsARepository(t *testing.T) {
	ws := t.TempDir()
	w := New(Defaults()).Watch(ws, false)
	writeFiles(t, ws, map[string]string{
		"W/HEAD":      "ref: refs/heads/master\n",
		"W/commondir": "../C\n",
	})
	wantMovedAside(t, ws, w.Check(), "W/commondir")
}

// Attacker trial 2, finding 1 (submodule): a git directory planted in
// .git/modules/<name> for a submodule not yet initialised is adopted by
// the user's `git submodule update --init`, config and all; nested
// submodules' live below <name>/modules/.
func TestWatchChecksGitModulesDirectories(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/HEAD":          "ref: refs/heads/main\n",
		".git/config":        "[core]\n\trepositoryformatversion = 0\n",
		".git/objects/.keep": "",
		".git/refs/heads/.k": "",
		".gitmodules":        "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n",
	})
	w := New(Defaults()).Watch(ws, true)
	layout := func(dir string) map[string]string {
		return map[string]string{
			dir + "/HEAD": "ref: refs/heads/main\n", dir + "/config": evilConfig,
			dir + "/objects/.keep": "", dir + "/refs/heads/.k": "",
		}
	}
	writeFiles(t, ws, layout(".git/modules/lib"))
	writeFiles(t, ws, layout(".git/modules/lib/modules/inner"))
	note := w.Check()
	wantMovedAside(t, ws, note, ".git/modules/lib/config", ".git/modules/lib/modules/inner/config")
	if !strings.Contains(note, "core.fsmonitor") {
		t.Errorf("the note does not say what the config set: %s", note)
	}
}

// Attacker trial 2 (issue 23), finding 10: a planted
// .git/rebase-merge/git-rebase-todo (or sequencer/todo) with an exec line
// runs on the user's `git rebase --continue`. A new one is moved aside; a
// list without exec lines stays.
func TestWatchMovesAsidePlantedRebaseTodoWithExec(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/HEAD":          "ref: refs/heads/main\n",
		".git/config":        "[core]\n\trepositoryformatversion = 0\n",
		".git/objects/.keep": "",
		".git/refs/heads/.k": "",
	})
	w := New(Defaults()).Watch(ws, true)
	writeFiles(t, ws, map[string]string{
		".git/rebase-merge/git-rebase-todo":     "pick 1111111 first\n  x touch /tmp/PWNED\n",
		".git/sequencer/todo":                   "pick 1111111 first\nexec\ttouch /tmp/PWNED\n",
		"sub/.git/rebase-merge/git-rebase-todo": "pick 1111111 first\nreword 2222222 second\n",
	})
	note := w.Check()
	wantMovedAside(t, ws, note, ".git/rebase-merge/git-rebase-todo", ".git/sequencer/todo")
	if strings.Contains(note, "sub/") {
		t.Errorf("a to-do list without exec lines was moved: %s", note)
	}
}
