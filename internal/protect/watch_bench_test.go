package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWatchCheck is what the check after each command costs on a
// workspace of 10,000 directories (100 × 100, a file in each) with ten
// nested repositories: go test ./internal/protect -bench WatchCheck.
func BenchmarkWatchCheck(b *testing.B) {
	ws := b.TempDir()
	for i := range 100 {
		for j := range 100 {
			d := filepath.Join(ws, fmt.Sprintf("d%d", i), fmt.Sprintf("e%d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "f.go"), []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if i%10 == 0 {
			g := filepath.Join(ws, fmt.Sprintf("d%d", i), ".git")
			_ = os.MkdirAll(filepath.Join(g, "hooks"), 0o755)
			_ = os.WriteFile(filepath.Join(g, "config"), []byte("[core]\n\tbare = false\n"), 0o644)
		}
	}
	w := New(Defaults()).Watch(ws, true)
	b.ResetTimer()
	for range b.N {
		if note := w.Check(); note != "" {
			b.Fatal(note)
		}
	}
}
