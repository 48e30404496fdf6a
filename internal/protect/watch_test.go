package protect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(rel, "/hooks/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// What a workspace held when the Watch began stays (the user's own
// repositories with git-lfs filters or hooks); what is new and makes git
// run code is moved aside, with a note naming it; a nested repository
// without such settings is left alone.
func TestWatchMovesAsideNewCodeRunningGitFiles(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/config":                 "[core]\n\tbare = false\n",
		".git/HEAD":                   "ref: refs/heads/main\n",
		"vendor/lib/.git/config":      "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n",
		"tools/.git/hooks/pre-commit": "#!/bin/sh\n",
		".envrc":                      "export A=1\n",
	})
	w := New(Defaults()).Watch(ws, false)
	if note := w.Check(); note != "" {
		t.Fatalf("nothing changed, yet Check says:\n%s", note)
	}
	writeFiles(t, ws, map[string]string{
		"sub/.git/config":                   "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch /tmp/x\"\n",
		"clean/.git/config":                 "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://example.com/r.git\n",
		"clean/.git/hooks/pre-push.sample":  "#!/bin/sh\n",
		"deep/a/b/.git/hooks/post-checkout": "#!/bin/sh\n",
		"mod/.git":                          "gitdir: ../.git/modules/mod\n",
		".git/modules/mod/config":           "[core]\n\tpager = evil\n",
		"wt/.git":                           "gitdir: " + outside + "\n",
		"top-new.txt":                       "x",
		".vscode/tasks.json":                "{}",
		".git/config.worktree":              "[core]\n\teditor = evil\n",
	})
	if err := os.Symlink(outside, filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(ws, "lnk")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{"real/gd/config": "[core]\n\tpager = evil\n", "via/.git": "gitdir: ../lnk/gd\n"})
	if err := os.MkdirAll(filepath.Join(ws, "sym"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "sym", ".git")); err != nil {
		t.Fatal(err)
	}
	note := w.Check()
	for _, moved := range []string{"sub/.git/config", "deep/a/b/.git/hooks/post-checkout", ".git/modules/mod/config", "wt/.git", "sym/.git", "via/.git", ".vscode", ".git/config.worktree"} {
		if !strings.Contains(note, moved+" (") || !strings.Contains(note, moved+Refused) {
			t.Errorf("the note does not say %s was moved aside:\n%s", moved, note)
		}
		if _, err := os.Lstat(filepath.Join(ws, moved)); err == nil {
			t.Errorf("%s is still there", moved)
		}
		if _, err := os.Lstat(filepath.Join(ws, moved+Refused)); err != nil {
			t.Errorf("%s was not moved to %s: %v", moved, moved+Refused, err)
		}
	}
	for _, kept := range []string{"vendor/lib/.git/config", "tools/.git/hooks/pre-commit", ".envrc", "clean/.git/config", "clean/.git/hooks/pre-push.sample", ".git/config"} {
		if _, err := os.Lstat(filepath.Join(ws, kept)); err != nil {
			t.Errorf("%s was moved, though it was there at the start or runs nothing: %v", kept, err)
		}
	}
	if !strings.Contains(note, "core.fsmonitor") || !strings.Contains(note, "hermes config set terminal.protected_paths") {
		t.Errorf("the note does not say why and how to change it:\n%s", note)
	}
	if again := w.Check(); again != "" {
		t.Errorf("a second check moved more:\n%s", again)
	}
	// Planting the same again is moved aside again, next to the first.
	writeFiles(t, ws, map[string]string{"sub/.git/config": "[core]\n\thooksPath = /tmp\n"})
	if note := w.Check(); !strings.Contains(note, "sub/.git/config"+Refused+".2") {
		t.Errorf("a second planted config was not moved to a new name:\n%s", note)
	}
}

// A write the user approved (a file tool writing a protected path on the
// host) is accepted and left in place; the empty Set watches nothing.
func TestWatchAcceptAndOff(t *testing.T) {
	ws := t.TempDir()
	w := New(Defaults()).Watch(ws, true)
	writeFiles(t, ws, map[string]string{".vscode/settings.json": "{}", "sub/.git/config": "[core]\n\teditor = vim\n"})
	w.Accept(".vscode/settings.json")
	w.Accept("sub/.git/config")
	if note := w.Check(); note != "" {
		t.Errorf("accepted writes were moved aside:\n%s", note)
	}
	if New(nil).Watch(ws, true) != nil {
		t.Error("an empty terminal.protected_paths still watches")
	}
	writeFiles(t, ws, map[string]string{"x/.git/config": "[core]\n\tpager = x\n"})
	var off *Watch
	if note := off.Check(); note != "" {
		t.Errorf("a nil Watch checked: %s", note)
	}
}

// Attacker trial 2 (issue 23), finding 9: the note (printed to the
// person's terminal) carried the moved file's path raw, so a directory
// named with escape sequences cleared the screen or retitled the window.
func TestWatchNoteQuotesControlCharactersInPaths(t *testing.T) {
	ws := t.TempDir()
	w := New(Defaults()).Watch(ws, false)
	dir := "x\x1b[2J\x1b]0;T\x07y"
	writeFiles(t, ws, map[string]string{
		dir + "/.git/HEAD":          "ref: refs/heads/master\n",
		dir + "/.git/config":        "[core]\n\tfsmonitor = \"touch /tmp/PWNED; false\"\n",
		dir + "/.git/objects/.keep": "",
		dir + "/.git/refs/heads/.k": "",
	})
	note := w.Check()
	if note == "" {
		t.Fatal("nothing was moved")
	}
	if strings.ContainsAny(note, "\x1b\x07") {
		t.Errorf("the note holds raw control characters: %q", note)
	}
	if !strings.Contains(note, `"x\x1b[2J\x1b]0;T\ay/.git/config"`) {
		t.Errorf("the note does not name the path quoted: %q", note)
	}
}

// Attacker trial 2 (issue 23), finding 7: project files other tools run
// commands from, and a home-directory workspace's login files, git's XDG
// config and .ssh/config, were not protected: created by a command, each
// ran on the host later. They are default entries now, so a new one is
// moved aside.
func TestWatchMovesAsideNewToolConfigsByDefault(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{".config/other/keep": "", ".cargo/registry/keep": ""})
	w := New(Defaults()).Watch(ws, false)
	planted := []string{
		".claude/settings.json", ".zed/settings.json", ".helix/languages.toml", ".devcontainer/devcontainer.json",
		".cargo/config.toml", ".cargo/config", "mise.toml", ".mise.toml", ".yarnrc.yml", ".npmrc", ".nvim.lua", ".exrc",
		".pre-commit-config.yaml", ".zshenv", ".zlogin", ".bash_login", ".config/git/config", ".config/fish/config.fish",
		".ssh/config",
	}
	files := map[string]string{}
	for _, p := range planted {
		files[p] = "run = \"touch /tmp/PWNED\"\n"
	}
	writeFiles(t, ws, files)
	note := w.Check()
	for _, p := range planted {
		entry, _ := New(Defaults()).Match(p, false)
		if entry == "" {
			t.Errorf("%s is not protected by default", p)
			continue
		}
		if _, err := os.Lstat(filepath.Join(ws, strings.TrimSuffix(entry, "/")+Refused)); err != nil {
			t.Errorf("%s (entry %s) was not moved aside: %v\n%s", p, entry, err, note)
		}
	}
}
