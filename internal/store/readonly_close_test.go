package store

import (
	"context"
	"path/filepath"
	"testing"
)

// A store opened read-only (hermes sessions list on a read-only
// HERMES_HOME) closes without panicking: it runs no background
// checkpoints to stop.
func TestOpenReadOnlyClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(context.Background(), NewSession{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
}
