package snapshot

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapReplaceFixture stores a snapshot of a one-file upper ("new" holding
// "restored") and returns the store and its id.
func snapReplaceFixture(t *testing.T) (*Store, Manifest) {
	t.Helper()
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	src := filepath.Join(t.TempDir(), "upper")
	snapWrite(t, filepath.Join(src, "dir", "new"), "restored", 0o644)
	m, err := store.Create("t", src, Origin{})
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
	snapWrite(t, filepath.Join(upper+replaceSuffix+"abcdef", "half"), "partial", 0o644)
	if _, err := store.ReplaceUpper(m.ID, upper); err != nil {
		t.Fatal(err)
	}
	for _, name := range snapNames(t, layer) {
		if strings.Contains(name, replaceSuffix) {
			t.Errorf("interrupted restore's %s is still there", name)
		}
	}
}

// TestSnapshotReplaceUpperWithoutRoomForBoth: a box using more than half
// its disk must still be restorable (here to the snapshot of its own
// layer): when the old tree and the extracted one do not fit together,
// the old one goes first, as restores did before they extracted beside it.
func TestSnapshotReplaceUpperWithoutRoomForBoth(t *testing.T) {
	layer := snapTmpfsLayer(t)
	upper := filepath.Join(layer, "upper")
	big := make([]byte, 5<<20)
	rand.Read(big)
	snapMust(t, os.MkdirAll(upper, 0o755))
	snapMust(t, os.WriteFile(filepath.Join(upper, "big"), big, 0o644))
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	m, err := store.Create("t", upper, Origin{})
	snapMust(t, err)
	snapMust(t, os.WriteFile(filepath.Join(upper, "later"), []byte("after the snapshot"), 0o644))

	if _, err := store.ReplaceUpper(m.ID, upper); err != nil {
		t.Fatalf("restore into a layer with room for one copy: %v", err)
	}
	if got := snapNames(t, upper); !slices.Equal(got, []string{"big"}) {
		t.Errorf("upper holds %v after the restore, want [big]", got)
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "big")); !bytes.Equal(data, big) {
		t.Errorf("big differs after the restore (%d bytes)", len(data))
	}
	if got := snapNames(t, layer); !slices.Equal(got, []string{"upper"}) {
		t.Errorf("layer dir holds %v, want only upper", got)
	}
}

// TestSnapshotReplaceUpperCorruptArchiveWithoutRoomKeepsOldTree: running
// out of room makes a restore remove the old tree and extract again, but
// not for an archive whose digest is wrong (it would fail after the old
// layer is gone).
func TestSnapshotReplaceUpperCorruptArchiveWithoutRoomKeepsOldTree(t *testing.T) {
	layer := snapTmpfsLayer(t)
	upper := filepath.Join(layer, "upper")
	big := make([]byte, 5<<20)
	rand.Read(big)
	snapWrite(t, filepath.Join(upper, "big"), string(big), 0o644)
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	m, err := store.Create("t", upper, Origin{})
	snapMust(t, err)
	data, err := os.ReadFile(store.ArchivePath(m.ID))
	snapMust(t, err)
	data[len(data)-5] ^= 0xff // past the file's contents: the extraction runs out of room first
	snapMust(t, os.WriteFile(store.ArchivePath(m.ID), data, 0o600))

	if _, err := store.ReplaceUpper(m.ID, upper); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("ReplaceUpper of a corrupted archive without room: %v, want the digest error", err)
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "big")); !bytes.Equal(data, big) {
		t.Errorf("the old layer was removed for a corrupted archive (big has %d bytes)", len(data))
	}
}

// snapTmpfsLayer mounts an 8 MiB tmpfs as a layer (root only).
func snapTmpfsLayer(t *testing.T) string {
	t.Helper()
	snapRequireRoot(t)
	layer := t.TempDir()
	snapMust(t, unix.Mount("tmpfs", layer, "tmpfs", 0, "size=8m"))
	t.Cleanup(func() { unix.Unmount(layer, unix.MNT_DETACH) })
	return layer
}

// TestSnapshotReplaceUpperTooBigKeepsOldTree: a snapshot that does not fit
// the layer even without the box's current files is refused before they
// are removed (they were removed, then the retry failed too and the box
// was left empty).
func TestSnapshotReplaceUpperTooBigKeepsOldTree(t *testing.T) {
	layer := snapTmpfsLayer(t)
	upper := filepath.Join(layer, "upper")
	current := make([]byte, 3<<20)
	rand.Read(current)
	snapWrite(t, filepath.Join(upper, "current"), string(current), 0o644)

	src := filepath.Join(t.TempDir(), "upper")
	big := make([]byte, 10<<20)
	rand.Read(big)
	snapWrite(t, filepath.Join(src, "big"), string(big), 0o644)
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	m, err := store.Create("t", src, Origin{})
	snapMust(t, err)

	_, err = store.ReplaceUpper(m.ID, upper)
	if err == nil || !strings.Contains(err.Error(), "which are kept") {
		t.Fatalf("ReplaceUpper of a snapshot larger than the layer: %v, want a no-room error", err)
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "current")); !bytes.Equal(data, current) {
		t.Errorf("the box's files were removed by a restore that could not fit (current has %d bytes)", len(data))
	}
	if got := snapNames(t, layer); !slices.Equal(got, []string{"upper"}) {
		t.Errorf("layer dir holds %v, want only upper", got)
	}
}

// TestSnapshotReplaceUpperSparseFileFits is the trial's case: a box with
// a 64 MiB sparse file on an 8 MiB layer is snapshotted, changes, and is
// restored. The restore wrote the holes as zeros, ran out of room, removed
// the box's files to make room and failed again, leaving it empty.
func TestSnapshotReplaceUpperSparseFileFits(t *testing.T) {
	layer := snapTmpfsLayer(t)
	upper := filepath.Join(layer, "upper")
	snapWrite(t, filepath.Join(upper, "data"), "v1", 0o644)
	f, err := os.Create(filepath.Join(upper, "sparse"))
	snapMust(t, err)
	snapMust(t, f.Truncate(64<<20))
	_, err = f.WriteAt([]byte("tail"), 64<<20-4)
	snapMust(t, err)
	f.Close()
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	m, err := store.Create("t", upper, Origin{})
	snapMust(t, err)
	blob := make([]byte, 4<<20)
	rand.Read(blob)
	snapMust(t, os.Remove(filepath.Join(upper, "sparse")))
	snapWrite(t, filepath.Join(upper, "data"), "v2", 0o644)
	snapWrite(t, filepath.Join(upper, "blob"), string(blob), 0o644)

	if _, err := store.ReplaceUpper(m.ID, upper); err != nil {
		t.Fatalf("restore of a snapshot with a sparse file: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "data")); string(data) != "v1" {
		t.Errorf("data = %q after the restore, want v1", data)
	}
	var st unix.Stat_t
	snapMust(t, unix.Stat(filepath.Join(upper, "sparse"), &st))
	if st.Size != 64<<20 || st.Blocks*512 > 1<<20 {
		t.Errorf("restored sparse file: size %d, %d bytes allocated; want 64 MiB with holes", st.Size, st.Blocks*512)
	}
}

// TestSnapshotReplaceUpperTightLayerExtractsOnce: when the layer plainly
// lacks room for the restored tree beside the old one, the size is read
// first and the archive extracted once, after the old tree is removed
// (the first extraction used to run until the layer was full, then
// failed with ENOSPC and was retried).
func TestSnapshotReplaceUpperTightLayerExtractsOnce(t *testing.T) {
	layer := snapTmpfsLayer(t)
	upper := filepath.Join(layer, "upper")
	big := make([]byte, 5<<20)
	rand.Read(big)
	snapWrite(t, filepath.Join(upper, "big"), string(big), 0o644)
	store := snapTestStore(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), []byte{1, 2, 3})
	m, err := store.Create("t", upper, Origin{})
	snapMust(t, err)
	archive, err := os.ReadFile(store.ArchivePath(m.ID))
	snapMust(t, err)

	extractions := 0
	err = replaceUpper(upper, func(tmp string) error {
		extractions++
		return Restore(bytes.NewReader(archive), tmp)
	}, func() (treeSize, error) { return archiveSize(bytes.NewReader(archive)) }, int64(len(archive)))
	if err != nil {
		t.Fatalf("restore into a layer with room for one copy: %v", err)
	}
	if extractions != 1 {
		t.Errorf("the archive was extracted %d times, want once", extractions)
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "big")); !bytes.Equal(data, big) {
		t.Errorf("big differs after the restore (%d bytes)", len(data))
	}
	if got := snapNames(t, layer); !slices.Equal(got, []string{"upper"}) {
		t.Errorf("layer dir holds %v, want only upper", got)
	}
}
