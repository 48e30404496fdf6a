package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapTestStore returns a store with a fixed clock and id randomness.
func snapTestStore(t *testing.T, now time.Time, random []byte) *Store {
	return &Store{
		Dir:  filepath.Join(t.TempDir(), "boxes", "snapshots"),
		Now:  func() time.Time { return now },
		Rand: bytes.NewReader(random),
	}
}

func TestSnapshotStoreCreateWritesArchiveAndManifest(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 55, 0, 0, time.UTC)
	store := snapTestStore(t, now, []byte{0xa1, 0xb2, 0xc3})
	upper := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(upper, "project", "README"), "hello\n", 0o644)

	m, err := store.Create("task-1", upper, Origin{Parent: "snap_20261129_010203_abcdef", BaseImage: "host"})
	snapMust(t, err)
	if m.ID != "snap_20261130_145500_a1b2c3" {
		t.Errorf("id = %q, want snap_20261130_145500_a1b2c3", m.ID)
	}
	fi, err := os.Stat(store.ArchivePath(m.ID))
	snapMust(t, err)
	if m.Size != fi.Size() || m.Size == 0 {
		t.Errorf("manifest size %d, archive has %d bytes", m.Size, fi.Size())
	}
	got, err := store.Get(m.ID)
	snapMust(t, err)
	if got != m {
		t.Errorf("Get = %+v, want %+v", got, m)
	}
	if got.Task != "task-1" || got.Parent != "snap_20261129_010203_abcdef" || got.BaseImage != "host" || !got.Created.Equal(now) || len(got.SHA256) != 64 {
		t.Errorf("manifest fields wrong: %+v", got)
	}
	leftovers, _ := filepath.Glob(filepath.Join(store.Dir, ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left in the store: %v", leftovers)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := store.RestoreInto(m.ID, restored); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(restored, "project", "README")); string(data) != "hello\n" {
		t.Errorf("restored README = %q", data)
	}
}

func TestSnapshotStoreListGetRemove(t *testing.T) {
	clock := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	store := &Store{
		Dir:  filepath.Join(t.TempDir(), "snapshots"),
		Now:  func() time.Time { clock = clock.Add(-time.Minute); return clock },
		Rand: bytes.NewReader([]byte{1, 1, 1, 2, 2, 2, 3, 3, 3}),
	}
	if list, err := store.List(); err != nil || len(list) != 0 {
		t.Fatalf("List of a missing store = %v, %v; want empty", list, err)
	}
	upper := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(upper, "f"), "f", 0o644)
	var ids []string
	for _, task := range []string{"t1", "t2", "t3"} {
		m, err := store.Create(task, upper, Origin{})
		snapMust(t, err)
		ids = append(ids, m.ID)
	}
	list, err := store.List()
	snapMust(t, err)
	var listed []string
	for _, m := range list {
		listed = append(listed, m.Task)
	}
	if strings.Join(listed, ",") != "t3,t2,t1" {
		t.Errorf("List order by creation = %v, want t3,t2,t1 (the clock ran backwards)", listed)
	}

	snapMust(t, store.Remove(ids[1]))
	if _, err := store.Get(ids[1]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Remove: err %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(store.ArchivePath(ids[1])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("archive of removed snapshot still there: %v", err)
	}
	if list, _ := store.List(); len(list) != 2 {
		t.Errorf("List after Remove has %d snapshots, want 2", len(list))
	}
	for _, bad := range []string{"snap_nope", "../../etc/passwd", ""} {
		if _, err := store.Get(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): err %v, want ErrNotFound", bad, err)
		}
	}
	if err := store.Remove("snap_20261130_080000_ffffff"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove of unknown id: err %v, want ErrNotFound", err)
	}
}

// TestSnapshotStoreRestoreRejectsCorruptArchive flips one byte of a stored
// archive: the restore must fail and leave no partial tree behind.
func TestSnapshotStoreRestoreRejectsCorruptArchive(t *testing.T) {
	store := snapTestStore(t, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), []byte{9, 9, 9})
	upper := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(upper, "data"), strings.Repeat("payload ", 1000), 0o644)
	m, err := store.Create("t", upper, Origin{})
	snapMust(t, err)
	data, err := os.ReadFile(store.ArchivePath(m.ID))
	snapMust(t, err)
	data[len(data)-5] ^= 0xff
	snapMust(t, os.WriteFile(store.ArchivePath(m.ID), data, 0o600))

	target := filepath.Join(t.TempDir(), "target")
	if _, err := store.RestoreInto(m.ID, target); err == nil {
		t.Fatal("RestoreInto of a corrupted archive succeeded")
	}
	entries, _ := os.ReadDir(target)
	if len(entries) != 0 {
		t.Errorf("failed restore left %d entries in the target", len(entries))
	}
}

// TestSnapshotStoreDamagedManifest checks that one damaged manifest is
// reported by name and can still be removed.
func TestSnapshotStoreDamagedManifest(t *testing.T) {
	store := snapTestStore(t, time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC), []byte{1, 2, 3})
	upper := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(upper, "f"), "f", 0o644)
	m, err := store.Create("t", upper, Origin{})
	snapMust(t, err)
	manifest := filepath.Join(store.Dir, m.ID+".json")
	snapMust(t, os.WriteFile(manifest, []byte("{not json"), 0o600))
	if _, err := store.List(); err == nil || !strings.Contains(err.Error(), manifest) {
		t.Errorf("List with a damaged manifest: err %v, want one naming %s", err, manifest)
	}
	snapMust(t, store.Remove(m.ID))
	if list, err := store.List(); err != nil || len(list) != 0 {
		t.Errorf("List after removing the damaged snapshot = %v, %v", list, err)
	}
}

// TestStoreSweepsWhatKilledCreatesLeft: a snapshot killed part way left a
// temporary archive (or an archive without its manifest) in the store for
// good; the next Create or List removes them, but not one a running
// Create holds, nor a complete snapshot.
func TestStoreSweepsWhatKilledCreatesLeft(t *testing.T) {
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	src := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(src, "f"), "x", 0o644)
	kept, err := store.Create("t", src, Origin{})
	snapMust(t, err)
	stale := filepath.Join(store.Dir, ".snap_20261201_110000_aaaaaa.tar.zst.123")
	orphan := filepath.Join(store.Dir, "snap_20261201_110000_bbbbbb.tar.zst")
	running := filepath.Join(store.Dir, ".snap_20261201_110000_cccccc.tar.zst.456")
	for _, p := range []string{stale, orphan, running} {
		snapMust(t, os.WriteFile(p, []byte("partial"), 0o600))
	}
	held, err := os.Open(running)
	snapMust(t, err)
	defer held.Close()
	snapMust(t, unix.Flock(int(held.Fd()), unix.LOCK_EX))

	if _, err := store.List(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, orphan} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left by a killed snapshot is still there", filepath.Base(p))
		}
	}
	for _, p := range []string{running, store.ArchivePath(kept.ID)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
