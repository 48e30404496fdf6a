package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathCompletionStaysInTheWorkspace: `@path` completion lists the
// workspace, not a directory a command linked out of it, and never offers
// a name with control characters (it would reach the terminal).
func TestPathCompletionStaysInTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws, outside := filepath.Join(dir, "work"), filepath.Join(dir, "outside")
	for _, p := range []string{filepath.Join(ws, "src"), outside} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(ws, "src", "main.go"), filepath.Join(outside, "id_rsa"), filepath.Join(ws, "evil\x1b]0;pwned\x07.md")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pathCompletions(ws, "src/m"), ","); got != "src/main.go" {
		t.Errorf("src/m completes to %q", got)
	}
	if got := pathCompletions(ws, "keys/"); len(got) != 0 {
		t.Errorf("a directory linked out of the workspace was listed: %q", got)
	}
	if got := strings.Join(pathCompletions(ws, ""), ","); got != "keys,src/" {
		t.Errorf("the workspace lists as %q, want keys,src/ (no control characters)", got)
	}
}
