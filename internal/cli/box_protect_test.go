package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/protect"
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

// Issue 23 F7: a nested repository whose config runs code, planted by
// `hermes box exec` or `box shell`, is moved aside when the command ends,
// and the person is told on stderr.
func TestBoxCLIExecAndShellCheckTheWorkspace(t *testing.T) {
	c := newBoxCLI(t)
	plant := "mkdir -p %s/.git && printf '[core]\\n\\tfsmonitor = \"echo PWNED\"\\n' > %s/.git/config\n"
	for _, run := range []struct{ stdin, dir string }{{"", "viaexec"}, {fmt.Sprintf(plant, "viashell", "viashell"), "viashell"}} {
		args := []string{"box", "exec", "--new", "ck", "--", "sh", "-c", fmt.Sprintf(plant, run.dir, run.dir)}
		if run.stdin != "" {
			args = []string{"box", "shell", "ck"}
		}
		_, errs, code := c.run(t, run.stdin, args...)
		if code != 0 || !strings.Contains(errs, run.dir+"/.git/config"+protect.Refused) {
			t.Errorf("%s: code %d, stderr does not name the config moved aside: %q", run.dir, code, errs)
		}
		if _, err := os.Stat(filepath.Join(c.ws, run.dir, ".git", "config"+protect.Refused)); err != nil {
			t.Errorf("%s: config not moved aside: %v", run.dir, err)
		}
	}
}

// New-user trial: a write into a protected path by box exec into a box
// that hermes box start runs gets the same note, once, on stderr.
func TestBoxCLIExecIntoStartedBoxNotesProtectedPath(t *testing.T) {
	c := newBoxCLI(t)
	if err := os.MkdirAll(filepath.Join(c.ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := "pp-started-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	if out, errs, code := c.runDetaching(t, "box", "start", task); code != 0 {
		t.Fatalf("box start: code %d %q %s", code, out, errs)
	}
	_, errs, code := c.run(t, "", "box", "exec", task, "--", "sh", "-c", "echo x >> .git/config")
	if code == 0 || strings.Count(errs, "hermes: writes to .git/config fail here on purpose") != 1 {
		t.Fatalf("write into .git/config of a started box: code %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
}
