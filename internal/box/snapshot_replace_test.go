package box

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// snapReplaceFixture stores a snapshot of a one-file upper ("new" holding
// "restored") and returns the store and its id.
func snapReplaceFixture(t *testing.T) (*SnapshotStore, SnapshotManifest) {
	t.Helper()
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	src := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(src, "dir", "new"), "restored", 0o644)
	m, err := store.Create("t", src, SnapshotOrigin{})
	snapMust(t, err)
	return store, m
}

func snapNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	snapMust(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestSnapshotReplaceUpperSwapsTree: restoring over a box's layer leaves
// exactly the snapshot's files (none of the old ones) and no temporary
// directory beside it; a missing upper is created.
func TestSnapshotReplaceUpperSwapsTree(t *testing.T) {
	store, m := snapReplaceFixture(t)
	layer := t.TempDir()
	upper := filepath.Join(layer, "upper")
	snapWrite(t, filepath.Join(upper, "old", "file"), "old", 0o644)
	snapWrite(t, filepath.Join(upper, "dir", "stale"), "old", 0o644)

	if _, err := store.ReplaceUpper(m.ID, upper); err != nil {
		t.Fatal(err)
	}
	if got := snapNames(t, upper); !slices.Equal(got, []string{"dir"}) {
		t.Errorf("upper holds %v after the restore, want [dir]", got)
	}
	if got := snapNames(t, filepath.Join(upper, "dir")); !slices.Equal(got, []string{"new"}) {
		t.Errorf("upper/dir holds %v, want [new]", got)
	}
	if got := snapNames(t, layer); !slices.Equal(got, []string{"upper"}) {
		t.Errorf("layer dir holds %v, want only upper", got)
	}

	fresh := filepath.Join(t.TempDir(), "none", "upper")
	if _, err := store.ReplaceUpper(m.ID, fresh); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(fresh, "dir", "new")); string(data) != "restored" {
		t.Errorf("restore into a missing upper: dir/new = %q", data)
	}
}

// TestSnapshotReplaceUpperKeepsOldTreeOnCorruptArchive: a restore that
// fails (here the archive's digest) must not have touched the layer it
// was to replace, and removes its partial tree.
func TestSnapshotReplaceUpperKeepsOldTreeOnCorruptArchive(t *testing.T) {
	store, m := snapReplaceFixture(t)
	data, err := os.ReadFile(store.ArchivePath(m.ID))
	snapMust(t, err)
	data[len(data)-5] ^= 0xff
	snapMust(t, os.WriteFile(store.ArchivePath(m.ID), data, 0o600))

	layer := t.TempDir()
	upper := filepath.Join(layer, "upper")
	snapWrite(t, filepath.Join(upper, "keep"), "old", 0o644)
	if _, err := store.ReplaceUpper(m.ID, upper); err == nil {
		t.Fatal("ReplaceUpper of a corrupted archive succeeded")
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "keep")); string(data) != "old" {
		t.Errorf("the old layer was changed by a failed restore: keep = %q", data)
	}
	if got := snapNames(t, layer); !slices.Equal(got, []string{"upper"}) {
		t.Errorf("failed restore left %v in the layer dir, want only upper", got)
	}
}

// TestSnapshotReplaceUpperRemovesInterruptedRestore: a temporary tree a
// crashed restore left beside the upper is removed by the next one.
func TestSnapshotReplaceUpperRemovesInterruptedRestore(t *testing.T) {
	store, m := snapReplaceFixture(t)
	layer := t.TempDir()
	upper := filepath.Join(layer, "upper")
	snapWrite(t, filepath.Join(upper+snapshotReplaceSuffix+"abcdef", "half"), "partial", 0o644)
	if _, err := store.ReplaceUpper(m.ID, upper); err != nil {
		t.Fatal(err)
	}
	for _, name := range snapNames(t, layer) {
		if strings.Contains(name, snapshotReplaceSuffix) {
			t.Errorf("interrupted restore's %s is still there", name)
		}
	}
}
