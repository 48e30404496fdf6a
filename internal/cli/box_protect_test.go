package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// New-user trial: a write into a protected path by `hermes box exec`
// showed only the kernel's "Read-only file system". Box exec now adds the
// terminal tool's note, naming the entry and the fix, once, after the
// command's output; other failures get no note.
func TestBoxCLIExecNotesProtectedPathFailure(t *testing.T) {
	c := newBoxCLI(t)
	if err := os.MkdirAll(filepath.Join(c.ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := c.run(t, "", "box", "exec", "--new", "pp", "--", "sh", "-c", "echo x >> .git/config")
	if code == 0 || !strings.Contains(errs, "Read-only file system") {
		t.Fatalf("write into .git/config: code %d, stderr %q", code, errs)
	}
	const note = "hermes: writes to .git/config fail here on purpose"
	if strings.Count(errs, note) != 1 || !strings.HasSuffix(strings.TrimSpace(errs), "to turn protection off)") ||
		strings.Index(errs, "Read-only file system") > strings.Index(errs, note) {
		t.Fatalf("want the note once, after the command's output; stderr %q", errs)
	}
	if !strings.Contains(errs, `hermes config set terminal.protected_paths '[".git/hooks/",`) {
		t.Errorf("note lacks the copyable fix: %q", errs)
	}
	if _, errs, code = c.run(t, "", "box", "exec", "pp", "--", "sh", "-c", "echo nope >&2; exit 3"); code != 3 || strings.Contains(errs, "protected_paths") {
		t.Errorf("unrelated failure: code %d, stderr %q", code, errs)
	}
	if _, errs, code = c.run(t, "echo x >> .git/config\n", "box", "shell", "pp"); code == 0 || strings.Count(errs, note) != 1 {
		t.Errorf("box shell: code %d, stderr %q", code, errs)
	}
}
