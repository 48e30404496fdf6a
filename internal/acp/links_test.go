package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestLinkTextDoesNotFollowWorkspaceLinksOut: an editor attaches a
// workspace file that a command turned into a link to the user's keys (or
// a hard link to HERMES_HOME/.env); the prompt names it and never carries
// the content. A file outside the workspace the person picked is read.
func TestLinkTextDoesNotFollowWorkspaceLinksOut(t *testing.T) {
	const secret = "sk-live-ACP-LINK-7070"
	dir := t.TempDir()
	ws, home, keys := filepath.Join(dir, "work"), filepath.Join(dir, "hermes-home"), filepath.Join(dir, "keys")
	for _, d := range []string{ws, home, keys} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{
		filepath.Join(keys, "id_rsa"): secret, filepath.Join(home, ".env"): "KEY=" + secret,
		filepath.Join(keys, "notes.txt"): "picked by the person", filepath.Join(ws, "main.go"): "package main",
	} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(keys, "id_rsa"), filepath.Join(ws, "notes.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(home, ".env"), filepath.Join(ws, "config.md")); err != nil {
		t.Fatal(err)
	}
	s := New(Options{MaxInlineBytes: 1 << 10})
	link := func(p string) string {
		return s.linkText(&sdk.ContentBlockResourceLink{Name: filepath.Base(p), Uri: "file://" + p}, ws, home)
	}
	for p, want := range map[string]string{
		filepath.Join(ws, "notes.md"):    "a symbolic link to a path outside the workspace; not shown",
		filepath.Join(ws, "config.md"):   "one of hermes' credential files in HERMES_HOME, not shown",
		filepath.Join(ws, "main.go"):     "package main",
		filepath.Join(keys, "notes.txt"): "picked by the person",
	} {
		got := link(p)
		if !strings.Contains(got, want) || strings.Contains(got, secret) {
			t.Errorf("link to %s = %q, want %q and no secret", p, got, want)
		}
	}
}
