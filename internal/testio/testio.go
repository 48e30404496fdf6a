// Package testio has the small I/O pieces tests share: a buffer a process
// or logger writes while the test reads it, and reading a file or failing.
// It is imported only by tests.
package testio

import (
	"bytes"
	"io"
	"os"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers: the
// stdout or log of a child process, a server or a slog handler, read by
// the test while it is written. The zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// ReadFile returns the file at path as a string; the test fails when it
// cannot be read.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// CopyExecutable copies the file src to dst with mode 0755 (a test binary
// or hermes put where another user can run it); the test fails on error.
func CopyExecutable(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
