package acp

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/waitfor"
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
	zero := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	s := New(Options{MaxInlineBytes: 1 << 10})
	for _, path := range []string{fifo, zero} {
		got := make(chan string, 1)
		go func() { // opening a FIFO with no writer blocks: the old code hung here
			got <- s.linkText(&sdk.ContentBlockResourceLink{Name: filepath.Base(path), Uri: "file://" + path}, "", "")
		}()
		select {
		case text := <-got:
			if !strings.Contains(text, "not a regular file") || strings.Contains(text, "\x00") {
				t.Errorf("link to %s = %.200q, want it named as not a regular file", path, text)
			}
		case <-time.After(time.Until(waitfor.Deadline(t))):
			t.Fatalf("link to %s: prompt blocked reading it", path)
		}
	}
}

// An embedded resource over the inline cap is cut at a rune boundary (a
// UTF-8 sequence split at the byte cap would reach the model as invalid
// text) and says it was truncated.
func TestEmbeddedResourceCutAtRuneBoundary(t *testing.T) {
	s := New(Options{MaxInlineBytes: 10})
	text := "aaaaaaaaa" + "é" + strings.Repeat("ü", 20) // é spans bytes 9 and 10
	got := s.promptText([]sdk.ContentBlock{sdk.ResourceBlock(sdk.EmbeddedResourceResource{
		TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/notes.txt", Text: text},
	})}, "", "", func(s string) string { return s })
	if !utf8.ValidString(got) {
		t.Errorf("inlined resource is not valid UTF-8: %q", got)
	}
	if !strings.Contains(got, "aaaaaaaaa\n") || strings.Contains(got, "é") || !strings.Contains(got, "truncated: 42 more bytes") {
		t.Errorf("want the first 9 bytes, then a truncation note naming the 42 bytes left out:\n%s", got)
	}
}
