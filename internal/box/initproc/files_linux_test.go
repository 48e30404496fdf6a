package initproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// ReadFile reads regular files only, and none over wire.MaxFileData: a
// FIFO held an init thread until a writer came, /dev/zero grew the init
// to 4.9 GB, a 2 GB sparse file had it killed (attacker trial,
// 2026-12-06). Each refusal comes at once, without reading.
func TestReadRegularFileRefusesWhatWouldNotEnd(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(wire.MaxFileData + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "not a regular file", link: "not a regular file", sparse: "file too large", dir: "not a regular file"} {
		if data, err := readRegularFile(path); err == nil || !strings.Contains(err.Error(), want) || data != nil {
			t.Errorf("%s: %d bytes, %v; want %q", filepath.Base(path), len(data), err, want)
		}
	}
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := readRegularFile(small); err != nil || string(data) != "hello\n" {
		t.Fatalf("a small file: %q %v", data, err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := readRegularFile(empty); err != nil || len(data) != 0 {
		t.Fatalf("an empty file: %q %v", data, err)
	}
}
