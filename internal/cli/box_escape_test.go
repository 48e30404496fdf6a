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

// TestBoxCLIApplyGatesProtectedPaths (issue 23): with an overlay workspace,
// changes to terminal.protected_paths (.git/config, .git/hooks/...) are
// marked in box diff and box apply refuses them, applying nothing, until
// --allow-protected.
func TestBoxCLIApplyGatesProtectedPaths(t *testing.T) {
	c := overlayWorkspaceCLI(t)
	if err := os.MkdirAll(filepath.Join(c.ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `printf '\tfsmonitor = "touch /tmp/pwned"\n' >> .git/config; mkdir -p .git/hooks; printf '#!/bin/sh\n' > .git/hooks/pre-commit; echo ok > plain.txt`
	if _, errs, code := c.run(t, "", "box", "exec", "--new", "prot", "--", "sh", "-c", script); code != 0 {
		t.Fatalf("exec: %s", errs)
	}
	out, errs, code := c.run(t, "", "box", "diff", "prot")
	if code != 0 {
		t.Fatalf("diff: %s", errs)
	}
	for _, want := range []string{
		"M .git/config  (protected: terminal.protected_paths .git/config)\n",
		"A .git/hooks/pre-commit  (protected: terminal.protected_paths .git/hooks/)\n",
		"A plain.txt\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q:\n%s", want, out)
		}
	}
	out, errs, code = c.run(t, "", "box", "apply", "prot")
	if code == 0 || !strings.Contains(errs, "--allow-protected") || !strings.Contains(errs, ".git/config") {
		t.Fatalf("apply with protected changes: want a refusal naming them and the flag; code %d\nstdout %q\nstderr %q", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Fatal("a refused apply changed .git/config")
	}
	if _, err := os.Stat(filepath.Join(c.ws, "plain.txt")); err == nil {
		t.Fatal("a refused apply still applied other changes")
	}
	if _, errs, code = c.run(t, "", "box", "apply", "--allow-protected", "prot"); code != 0 {
		t.Fatalf("apply --allow-protected: %s", errs)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, ".git", "config")); !strings.Contains(string(b), "fsmonitor") {
		t.Fatalf(".git/config after an allowed apply: %q", b)
	}
}
