package local

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWriteFileLosesNoSymlinkRace (issue 15: write_file lost a symlink
// race and overwrote config.yaml 3 runs of 3): while another process keeps
// swapping work/x.yaml between a regular file and a symlink to
// HERMES_HOME/config.yaml, hundreds of writes to work/x.yaml never touch
// config.yaml.
func TestWriteFileLosesNoSymlinkRace(t *testing.T) {
	f := newGuardFixture(t, SandboxOff)
	config := filepath.Join(f.hermesHome, "config.yaml")
	before, _ := os.ReadFile(config)
	target := filepath.Join(f.work, "x.yaml")
	link, plain := filepath.Join(f.work, ".link"), filepath.Join(f.work, ".plain")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = os.Symlink(config, link)
			_ = os.Rename(link, target)
			_ = os.WriteFile(plain, []byte("plain"), 0o644)
			_ = os.Rename(plain, target)
		}
	}()
	refused := 0
	for range 500 {
		err := f.env.WriteFile(context.Background(), target, []byte("approvals:\n  mode: off\n"), 0)
		if errors.Is(err, fs.ErrPermission) {
			refused++
		}
	}
	stop.Store(true)
	wg.Wait()
	if after, _ := os.ReadFile(config); !bytes.Equal(before, after) {
		t.Fatalf("config.yaml was overwritten:\n%s", after)
	}
	t.Logf("%d of 500 writes met the symlink and were refused", refused)
}

// TestFileToolsRefuseProtectedFilesByIdentity: HERMES_HOME's .env and
// secrets are unreadable and config.yaml unwritable through the file
// operations, under their own names, through a symlink and through a hard
// link; creating a protected name in HERMES_HOME is refused; the rest of
// HERMES_HOME stays usable.
func TestFileToolsRefuseProtectedFilesByIdentity(t *testing.T) {
	f := newGuardFixture(t, SandboxOff)
	ctx := context.Background()
	env := filepath.Join(f.hermesHome, ".env")
	if err := os.Link(env, filepath.Join(f.work, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.hermesHome, filepath.Join(f.work, "hh")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{env, "notes.txt", "hh/.env", "hh/secrets/gh", filepath.Join(f.hermesHome, "state.db")} {
		got, err := f.env.ReadFile(ctx, p)
		if !errors.Is(err, fs.ErrPermission) || bytes.Contains(got, []byte(fakeKey)) {
			t.Errorf("read %s: want a permission error, got %v (%q)", p, err, got)
		}
	}
	for _, p := range []string{filepath.Join(f.hermesHome, "config.yaml"), "hh/config.yaml", "notes.txt", "hh/.env.local", "hh/secrets/new", filepath.Join(f.hermesHome, "state.db-wal")} {
		if err := f.env.WriteFile(ctx, p, []byte("x"), 0); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("write %s: want a permission error, got %v", p, err)
		}
	}
	if b, _ := os.ReadFile(env); !bytes.Contains(b, []byte(fakeKey)) {
		t.Fatalf(".env changed: %q", b)
	}
	if got, err := f.env.ReadFile(ctx, "hh/config.yaml"); err != nil || len(got) == 0 {
		t.Errorf("config.yaml must stay readable: %v", err)
	}
	if err := f.env.WriteFile(ctx, "hh/skills/b.md", []byte("skill"), 0); err != nil {
		t.Errorf("writing a skill file in HERMES_HOME: %v", err)
	}
	for _, left := range []string{"hh", "notes.txt"} {
		if _, err := os.Lstat(filepath.Join(f.work, left)); err != nil {
			t.Errorf("%s was replaced: %v", left, err)
		}
	}
}
