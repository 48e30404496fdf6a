package workspacefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReadContextFile: a 4 KiB AGENTS.md read through the Reader
// (open of the root and HERMES_HOME's protected set included, as the
// prompt does once per session) against a plain os.ReadFile.
func BenchmarkReadContextFile(b *testing.B) {
	dir := b.TempDir()
	ws, home := filepath.Join(dir, "work"), filepath.Join(dir, "home")
	for _, d := range []string{ws, filepath.Join(home, "secrets")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(home, ".env"), filepath.Join(home, "secrets", "secrets.json")} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte(strings.Repeat("rule\n", 800)), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("reader", func(b *testing.B) {
		for b.Loop() {
			r, err := Open(ws, home)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadFile("AGENTS.md", 1<<20); err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(ws, "AGENTS.md")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
