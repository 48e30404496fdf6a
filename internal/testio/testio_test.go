package testio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once lose nothing (run with -race).
func TestBufferConcurrentWritersAndReader(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ReadFile(t, p); got != "text\n" {
		t.Errorf("ReadFile = %q", got)
	}
}
