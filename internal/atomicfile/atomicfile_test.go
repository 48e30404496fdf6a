package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWithModeAndCreatesDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "state.json")
	if err := Write(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(got) != "two" || st.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v, want two 0600", got, st.Mode().Perm())
	}
	if err := Write(path, []byte("three"), 0o644, KeepMode()); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("KeepMode changed the mode to %v", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Fatalf("created directory mode %v, want 0700", st.Mode().Perm())
	}
}

func TestWriteErrorNamesPath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Write(filepath.Join(blocker, "x"), []byte("y"), 0o600)
	if err == nil || !filepath.IsAbs(blocker) || !strings.Contains(err.Error(), blocker) {
		t.Fatalf("got %v, want an error naming %s", err, blocker)
	}
}
