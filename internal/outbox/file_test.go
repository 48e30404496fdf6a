package outbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/outbox"
	"github.com/hermes-go/hermes/internal/outbox/conformance"
)

func TestFileConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) conformance.Handles {
		home := t.TempDir()
		f := outbox.NewFile(home)
		return conformance.Handles{A: f, B: f, Reopen: func() outbox.Queue { return outbox.NewFile(home) }}
	})
}

// A file an earlier release wrote (parts as the gateway's OutMessage
// JSON) is read, and a restart retries at once.
func TestFileReadsEarlierFormat(t *testing.T) {
	home := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, "gateway"), 0o700))
	old := `[{"id": 3, "chat": "42", "parts": [{"Text": "kept", "Plain": false}],
		"created": "2026-12-05T10:00:00Z", "attempts": 2, "next_at": "2099-01-01T00:00:00Z"}]`
	must(t, os.WriteFile(filepath.Join(home, "gateway", "undelivered-telegram.json"), []byte(old), 0o600))
	rs, err := outbox.NewFile(home).Claim(context.Background(), "telegram", time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC), time.Minute)
	if err != nil || len(rs) != 1 || rs[0].Attempts != 2 || !strings.Contains(string(rs[0].Parts), `"kept"`) {
		t.Fatalf("claim of the earlier file = %+v, %v; want its reply, at once", rs, err)
	}
}

// The file is private (0600) while it holds replies and removed once
// the last one is delivered.
func TestFilePrivateAndRemovedWhenEmpty(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := outbox.NewFile(home)
	must(t, f.Add(ctx, "slack", "C1", []byte(`[{"text":"a"}]`), now, now))
	path := filepath.Join(home, "gateway", "undelivered-slack.json")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept file: %v %v; want mode 0600", fi, err)
	}
	rs, err := f.Claim(ctx, "slack", now, time.Minute)
	if err != nil || len(rs) != 1 {
		t.Fatalf("claim = %+v, %v", rs, err)
	}
	must(t, f.Ack(ctx, "slack", rs[0].ID))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file stays after everything was delivered: %v", err)
	}
}

func TestFileRejectsBrokenFile(t *testing.T) {
	home := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, "gateway"), 0o700))
	path := filepath.Join(home, "gateway", "undelivered-slack.json")
	must(t, os.WriteFile(path, []byte("{not json"), 0o600))
	_, err := outbox.NewFile(home).Len(context.Background(), "slack")
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Len of a broken file = %v; want an error naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Fatalf("the broken file was changed to %q; it holds replies and must stay", b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
