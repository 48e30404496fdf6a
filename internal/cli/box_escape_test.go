package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoxCLIDiffQuotesNamesAndGatesExternalSymlinks: a file name with
// terminal escapes cannot disguise itself in hermes box diff/apply
// output or in errors, and symlinks pointing outside the workspace are
// shown as such and only applied with --allow-external-symlinks.
func TestBoxCLIDiffQuotesNamesAndGatesExternalSymlinks(t *testing.T) {
	c := overlayWorkspaceCLI(t)
	script := `printf x > "$(printf 'evil.sh\033[2K\rM README.md')"; ln -s /etc/shadow ext; ln -s ../../../root up; ln -s a.txt inner`
	if _, errs, code := c.run(t, "", "box", "exec", "--new", "esc", "--", "sh", "-c", script); code != 0 {
		t.Fatalf("exec: %s", errs)
	}
	out, errs, code := c.run(t, "", "box", "diff", "esc")
	if code != 0 {
		t.Fatalf("diff: %s", errs)
	}
	for _, want := range []string{
		`A "evil.sh\x1b[2K\rM README.md"` + "\n",
		"A ext -> /etc/shadow  (symlink outside the workspace)\n",
		"A up -> ../../../root  (symlink outside the workspace)\n",
		"A inner -> a.txt\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("diff printed raw control characters: %q", out)
	}

	out, errs, code = c.run(t, "", "box", "apply", "esc")
	if code == 0 || !strings.Contains(errs, "--allow-external-symlinks") || !strings.Contains(errs, "ext -> /etc/shadow") {
		t.Fatalf("apply with external symlinks: want a refusal naming them and the flag; code %d\nstdout %q\nstderr %q", code, out, errs)
	}
	for _, name := range []string{"ext", "inner"} {
		if _, err := os.Lstat(filepath.Join(c.ws, name)); err == nil {
			t.Fatalf("a refused apply still changed the workspace (%s exists)", name)
		}
	}
	if _, errs, code = c.run(t, "", "box", "apply", "--allow-external-symlinks", "esc"); code != 0 {
		t.Fatalf("apply --allow-external-symlinks: %s", errs)
	}
	if target, err := os.Readlink(filepath.Join(c.ws, "ext")); err != nil || target != "/etc/shadow" {
		t.Fatalf("ext after an allowed apply: %q %v", target, err)
	}

	_, errs, _ = c.run(t, "", "box", "diff", "no-such\x1b]0;pwned\x07task")
	if strings.ContainsAny(errs, "\x1b\x07") {
		t.Errorf("an error printed raw control characters: %q", errs)
	}
}
