package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box"
)

// fakeSessionBox leaves box state for task as a session's box would: its
// directory with a layer image, last changed at mtime.
func fakeSessionBox(t *testing.T, home, task string, mtime time.Time) string {
	t.Helper()
	dir := filepath.Join(home, "boxes", task)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{img, dir} {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func boxPreflight(t *testing.T) {
	t.Helper()
	if err := box.Preflight(); err != nil {
		t.Skipf("boxes are not supported here: %v", err)
	}
}

// `sessions delete` deletes the session's box too (its layer outlived it),
// unless --keep-box.
func TestSessionsDeleteDeletesTheBox(t *testing.T) {
	boxPreflight(t)
	e := newSessionsEnv(t)
	keptDir := fakeSessionBox(t, e.home, e.a.ID, time.Now())
	code, out, stderr := e.run(t, "", false, "sessions", "delete", e.a.ID, "--yes", "--keep-box")
	if code != 0 || !strings.Contains(out, "Kept its box") {
		t.Fatalf("delete --keep-box: %d %s %s", code, out, stderr)
	}
	if _, err := os.Stat(keptDir); err != nil {
		t.Errorf("--keep-box deleted the box: %v", err)
	}
	dir := fakeSessionBox(t, e.home, e.b.ID, time.Now())
	code, out, stderr = e.run(t, "", false, "sessions", "delete", e.b.ID, "--yes")
	if code != 0 || !strings.Contains(out, "Deleted its box") {
		t.Fatalf("delete --yes: %d %s %s", code, out, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the deleted session's box is still there: %v", err)
	}
}

// `box prune` deletes the boxes of sessions that are gone; with
// --older-than also those idle that long; never a live recent session's
// box or a box not named by a session.
func TestBoxPruneDeletesBoxesOfGoneAndIdleSessions(t *testing.T) {
	boxPreflight(t)
	e := newSessionsEnv(t)
	now := time.Now()
	gone := fakeSessionBox(t, e.home, "20250101_000000_abcdef", now)
	recent := fakeSessionBox(t, e.home, e.a.ID, now)
	idle := fakeSessionBox(t, e.home, e.b.ID, now.Add(-40*24*time.Hour))
	named := fakeSessionBox(t, e.home, "my-task", now.Add(-400*24*time.Hour))
	code, out, stderr := e.run(t, "", false, "box", "prune", "--dry-run", "--older-than", "720h")
	if code != 0 || !strings.Contains(out, "would remove 20250101_000000_abcdef") || !strings.Contains(out, "would remove "+e.b.ID) {
		t.Fatalf("prune --dry-run: %d %s %s", code, out, stderr)
	}
	code, out, stderr = e.run(t, "", false, "box", "prune")
	if code != 0 {
		t.Fatalf("prune: %d %s %s", code, out, stderr)
	}
	exists := func(dir string) bool { _, err := os.Stat(dir); return err == nil }
	if exists(gone) || !exists(idle) || !exists(recent) || !exists(named) {
		t.Fatalf("after prune: gone %v idle %v recent %v named %v\n%s", exists(gone), exists(idle), exists(recent), exists(named), out)
	}
	if code, out, stderr = e.run(t, "", false, "box", "prune", "--older-than", "720h"); code != 0 {
		t.Fatalf("prune --older-than: %d %s %s", code, out, stderr)
	}
	if exists(idle) || !exists(recent) || !exists(named) {
		t.Fatalf("after prune --older-than 720h: idle %v recent %v named %v\n%s", exists(idle), exists(recent), exists(named), out)
	}
}
