package protect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The attacker trial of issue 23: each input below was missed by the
// first workspace check and made the user's git run a program.
func TestWatchMovesAsideAttackerTrialInputs(t *testing.T) {
	ws := t.TempDir()
	w := New(Defaults()).Watch(ws, false)
	files := map[string]string{
		// F1: a continued value hides a later key.
		"a/.git/config": "[core]\n\trepositoryformatversion = 0\n\tx = a\\\n[foo]\n\tfsmonitor = \"echo PWNED-A >&2; false\"\n",
		// F2: "]" inside a quoted subsection.
		"b/.git/config": "[core]\n\tbare = false\n[filter \"x]\"] clean = \"echo PWNED-B >&2; cat\"\n",
		// F3: keys the denylist missed.
		"c/.git/config": "[gpg \"ssh\"]\n\tdefaultKeyCommand = echo PWNED-C\n[remote \"origin\"]\n\turl = ext::sh -c echo% PWNED-C2>&2\n[protocol \"ext\"]\n\tallow = always\n",
		// F5: a bare repository.
		"e/HEAD":           "ref: refs/heads/main\n",
		"e/config":         "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tpager = echo PWNED-E\n",
		"e/objects/.keep":  "",
		"e/refs/heads/.k":  "",
		"fine/.git/config": "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = git@example.com:r.git\n",
	}
	writeFiles(t, ws, files)
	// F4: 3,000 other files before an executable pre-commit.
	hooks := filepath.Join(ws, "d/.git/hooks")
	crowded := filepath.Join(ws, "d2/.git/hooks")
	for _, dir := range []string{hooks, crowded} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3000; i++ {
		if err := os.WriteFile(filepath.Join(hooks, fmt.Sprintf("junk%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\necho PWNED-D >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= scanMaxHooks+1; i++ {
		if err := os.WriteFile(filepath.Join(crowded, fmt.Sprintf("h%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	note := w.Check()
	for _, moved := range []string{"a/.git/config", "b/.git/config", "c/.git/config", "e/config", "d/.git/hooks", "d2/.git/hooks"} {
		if !strings.Contains(note, moved+" (") {
			t.Errorf("the note does not name %s:\n%s", moved, note)
		}
		if _, err := os.Lstat(filepath.Join(ws, moved+Refused)); err != nil {
			t.Errorf("%s was not moved aside: %v", moved, err)
		}
	}
	for _, named := range []string{"line 3: a value continued", "filter.x].clean", "gpg.ssh.defaultkeycommand", "remote.origin.url=ext::", "protocol.ext.allow", "core.pager=echo PWNED-E", "more than 1000 entries"} {
		if !strings.Contains(note, named) {
			t.Errorf("the note does not name %q:\n%s", named, note)
		}
	}
	// The crowded directory goes aside whole, its pre-commit with it.
	if _, err := os.Lstat(filepath.Join(ws, "d/.git/hooks"+Refused, "pre-commit")); err != nil {
		t.Errorf("pre-commit did not go aside with its directory: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "fine/.git/config")); err != nil || strings.Contains(note, "fine/") {
		t.Errorf("a config with only approved keys was touched (%v):\n%s", err, note)
	}
}

// F6: a walk cut off at its depth bound says so, with that reason, to the
// person (WarnTo) as well as in the note, once.
func TestWatchCutOffAtDepthWarnsThePerson(t *testing.T) {
	ws := t.TempDir()
	deep := ws
	for i := 0; i < scanMaxDepth+2; i++ {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	w := New(Defaults()).Watch(ws, false)
	var person bytes.Buffer
	w.WarnTo(&person)
	note := w.Check()
	want := fmt.Sprintf("more than %d levels deep", scanMaxDepth)
	if !strings.Contains(note, want) || !strings.Contains(person.String(), want) {
		t.Errorf("the cut-off walk was not reported with its reason:\nnote: %s\nperson: %s", note, person.String())
	}
	if strings.Contains(note, "directories;") {
		t.Errorf("a depth cut-off is reported as a count one: %s", note)
	}
	if again := w.Check(); again != "" {
		t.Errorf("the notice repeats: %s", again)
	}
}
