package protect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Watch resumed from an earlier Watch's Baseline keeps that start: what
// the workspace held then stays, what came after it (while the earlier
// Watch's process died before its check) is moved aside; a baseline of
// another workspace is refused.
func TestResumeWatchKeepsTheEarlierStart(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"vendor/lib/.git/config": "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n",
		".envrc":                 "export A=1\n",
	})
	set := New(Defaults())
	data := set.Watch(ws, false).Baseline()
	writeFiles(t, ws, map[string]string{
		"sub/.git/config": "[core]\n\tfsmonitor = \"touch /tmp/x\"\n",
		".vscode/x.json":  "{}",
	})
	w, err := set.ResumeWatch(ws, data)
	if err != nil {
		t.Fatal(err)
	}
	note := w.Check()
	for _, moved := range []string{"sub/.git/config", ".vscode"} {
		if _, err := os.Stat(filepath.Join(ws, moved+Refused)); err != nil || !strings.Contains(note, moved) {
			t.Errorf("%s was not moved aside (%v); note:\n%s", moved, err, note)
		}
	}
	for _, kept := range []string{"vendor/lib/.git/config", ".envrc"} {
		if _, err := os.Stat(filepath.Join(ws, kept)); err != nil {
			t.Errorf("%s, there at the start, was moved: %v", kept, err)
		}
	}
	if _, err := set.ResumeWatch(t.TempDir(), data); err == nil {
		t.Error("a baseline of another workspace was resumed")
	}
	if _, err := set.ResumeWatch(ws, []byte("not json")); err == nil {
		t.Error("a broken baseline was resumed")
	}
}
