package acp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// A resource link to something that is not a regular file (a FIFO, a
// symlink to /dev/zero or /dev/urandom: stat says 0 bytes) is named, not
// read: reading it would block the prompt or fill memory past the inline
// cap.
func TestLinkTextRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	const limit = 1 << 10
	written := make(chan struct{})
	go func() { // fills the pipe beyond the cap, then closes it
		defer close(written)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		_, _ = w.Write(bytes.Repeat([]byte("z"), 4*limit))
		_ = w.Close()
	}()
	s := New(Options{MaxInlineBytes: limit})
	got := s.linkText(&sdk.ContentBlockResourceLink{Name: "pipe", Uri: "file://" + fifo}, "")
	if strings.Contains(got, "zzzz") || !strings.Contains(got, "not a regular file") {
		t.Fatalf("FIFO link = %.200q, want it named as not a regular file", got)
	}
	// Unblock the writer when the pipe was not read.
	if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		_ = r.Close()
	}
	<-written

	zero := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if got := s.linkText(&sdk.ContentBlockResourceLink{Name: "zero.txt", Uri: "file://" + zero}, ""); !strings.Contains(got, "not a regular file") {
		t.Errorf("/dev/zero link = %.200q, want it named as not a regular file", got)
	}
}
