package store

import (
	"path/filepath"
	"testing"
)

// Several processes opening a fresh state.db at once must all succeed
// (regression: "table sessions already exists" from a racing migration).
func TestConcurrentOpenOfFreshStore(t *testing.T) {
	for round := 0; round < 5; round++ {
		path := filepath.Join(t.TempDir(), FileName)
		errs := make(chan error, 6)
		for i := 0; i < 6; i++ {
			go func() {
				st, err := Open(path)
				if err == nil {
					err = st.Close()
				}
				errs <- err
			}()
		}
		for i := 0; i < 6; i++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
