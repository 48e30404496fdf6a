package memory

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkAdd measures one locked, fsynced add to a full store (each add
// evicts the oldest entry to the archive).
func BenchmarkAdd(b *testing.B) {
	s := NewStore(filepath.Join(b.TempDir(), "memories"), 0, 0, nil)
	i := 0
	for b.Loop() {
		if _, err := s.Add(TargetMemory, fmt.Sprintf("benchmark entry number %08d with some padding text", i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
