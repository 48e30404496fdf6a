package snapshot

import (
	"bytes"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapRequireRoot skips tests that need root for overlay mounts, mknod of
// whiteouts and trusted.* xattrs.
func snapRequireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: overlay mounts, whiteout mknod and trusted.overlay.* xattrs")
	}
}

// snapOverlay is one overlay mount used by a test.
type snapOverlay struct {
	lower, upper, work, merged string
	mounted                    bool
}

// snapMountOverlay mounts lower+upper under dir and unmounts in Cleanup.
func snapMountOverlay(t *testing.T, dir, lower, upper string) *snapOverlay {
	t.Helper()
	o := &snapOverlay{lower: lower, upper: upper, work: filepath.Join(dir, "work"), merged: filepath.Join(dir, "merged")}
	for _, d := range []string{o.upper, o.work, o.merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", o.lower, o.upper, o.work)
	if err := unix.Mount("overlay", o.merged, "overlay", 0, opts); err != nil {
		if errors.Is(err, unix.ENODEV) {
			t.Skip("kernel has no overlayfs (CONFIG_OVERLAY_FS)")
		}
		t.Fatalf("mount overlay %s: %v", opts, err)
	}
	o.mounted = true
	t.Cleanup(o.unmount)
	return o
}

func (o *snapOverlay) unmount() {
	if o.mounted {
		unix.Unmount(o.merged, unix.MNT_DETACH)
		o.mounted = false
	}
}

// snapWrite writes a file, creating parents.
func snapWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(path, uint32(mode)); err != nil { // raw bits: 0o4000 is setuid
		t.Fatal(err)
	}
}

func snapMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapBuildLower makes the read-only base used by the overlay tests.
func snapBuildLower(t *testing.T, lower string) {
	snapWrite(t, filepath.Join(lower, "keep.txt"), "unchanged\n", 0o644)
	snapWrite(t, filepath.Join(lower, "modify.txt"), "original\n", 0o644)
	snapWrite(t, filepath.Join(lower, "delete.txt"), "doomed\n", 0o644)
	snapWrite(t, filepath.Join(lower, "olddir", "a"), "a\n", 0o644)
	snapWrite(t, filepath.Join(lower, "olddir", "b"), "b\n", 0o644)
	snapWrite(t, filepath.Join(lower, "etc", "conf"), "x=1\n", 0o600)
}

// snapCapNetRaw is a valid VFS_CAP_REVISION_2 security.capability value
// granting CAP_NET_RAW (13) effective+permitted (linux/capability.h).
func snapCapNetRaw() []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000|0x1)
	binary.LittleEndian.PutUint32(b[4:], 1<<13)
	return b
}

// snapChangeThroughMerged makes the changes a box would: new files,
// a modified and a deleted lower file, a lower dir replaced by an opaque
// one, symlinks, a hardlink pair, special modes, owners and xattrs.
func snapChangeThroughMerged(t *testing.T, merged string) {
	snapWrite(t, filepath.Join(merged, "modify.txt"), "changed in the box\n", 0o644)
	snapMust(t, os.Remove(filepath.Join(merged, "delete.txt")))
	snapMust(t, os.RemoveAll(filepath.Join(merged, "olddir")))
	snapWrite(t, filepath.Join(merged, "olddir", "fresh"), "new dir content\n", 0o644)
	snapWrite(t, filepath.Join(merged, "work", "main.go"), "package main\n", 0o644)
	snapWrite(t, filepath.Join(merged, "work", "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	snapWrite(t, filepath.Join(merged, "empty"), "", 0o600)
	snapMust(t, os.Chown(filepath.Join(merged, "work", "main.go"), 1234, 5678))
	snapMust(t, os.Symlink("main.go", filepath.Join(merged, "work", "link-rel")))
	snapMust(t, os.Symlink("/etc/conf", filepath.Join(merged, "work", "link-abs")))
	snapMust(t, os.Symlink("../nowhere", filepath.Join(merged, "work", "link-dangling")))
	snapMust(t, os.Link(filepath.Join(merged, "work", "run.sh"), filepath.Join(merged, "work", "run-hardlink.sh")))
	snapMust(t, unix.Mkfifo(filepath.Join(merged, "work", "pipe"), 0o640))
	snapMust(t, unix.Setxattr(filepath.Join(merged, "work", "main.go"), "user.hermes.note", []byte("kept"), 0))
	snapMust(t, unix.Chmod(filepath.Join(merged, "work"), 0o1777))
	old := time.Date(2020, 1, 2, 3, 4, 5, 123456789, time.UTC)
	snapMust(t, os.Chtimes(filepath.Join(merged, "keep.txt"), old, old)) // copy-up of metadata only
}

// snapDescribe walks a tree and returns one line per entry: type, mode,
// owner, mtime (ns), size, content hash or link target, kept xattrs and
// hardlink group, so two trees can be compared as a whole.
func snapDescribe(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	inodes := map[uint64]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("%s type=%o mode=%o uid=%d gid=%d rdev=%d", rel, st.Mode&unix.S_IFMT, st.Mode&0o7777, st.Uid, st.Gid, st.Rdev)
		line += fmt.Sprintf(" mtime=%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += fmt.Sprintf(" size=%d sha=%s nlink=%d", st.Size, hex.EncodeToString(sum[:8]), st.Nlink)
			if st.Nlink > 1 {
				if first, ok := inodes[st.Ino]; ok {
					line += " hardlink-of=" + first
				} else {
					inodes[st.Ino] = rel
				}
			}
		case unix.S_IFLNK:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		var names []byte = make([]byte, 4096)
		list, err := listXattrs(path, &names)
		if err != nil {
			return err
		}
		slices.Sort(list)
		for _, name := range list {
			if !keepsXattr(name) {
				continue
			}
			buf := make([]byte, 256)
			v, err := getXattr(path, name, &buf)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" xattr[%s]=%x", name, v)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func snapDiff(t *testing.T, what string, want, got []string) {
	t.Helper()
	if slices.Equal(want, got) {
		return
	}
	t.Errorf("%s differs:\nwant:\n  %s\ngot:\n  %s", what, strings.Join(want, "\n  "), strings.Join(got, "\n  "))
}

func snapRoundTrip(t *testing.T, upper, target string) {
	t.Helper()
	var archive bytes.Buffer
	if err := Archive(upper, &archive); err != nil {
		t.Fatalf("Archive: %v", err)
	}
	if err := Restore(bytes.NewReader(archive.Bytes()), target); err != nil {
		t.Fatalf("Restore: %v", err)
	}
}

// TestSnapshotRestoreOverlayMergedView is the user-visible promise: a task
// restored from a snapshot sees exactly the filesystem it left, including
// files it deleted from the base staying deleted.
func TestSnapshotRestoreOverlayMergedView(t *testing.T) {
	snapRequireRoot(t)
	dir := t.TempDir()
	lower := filepath.Join(dir, "lower")
	snapBuildLower(t, lower)
	first := snapMountOverlay(t, filepath.Join(dir, "first"), lower, filepath.Join(dir, "first", "upper"))
	snapChangeThroughMerged(t, first.merged)
	wantMerged := snapDescribe(t, first.merged)
	first.unmount()
	wantUpper := snapDescribe(t, first.upper)

	restored := filepath.Join(dir, "second", "upper")
	snapRoundTrip(t, first.upper, restored)
	snapDiff(t, "restored upper layer", wantUpper, snapDescribe(t, restored))

	second := snapMountOverlay(t, filepath.Join(dir, "second"), lower, restored)
	snapDiff(t, "merged view after restore", wantMerged, snapDescribe(t, second.merged))

	if _, err := os.Lstat(filepath.Join(second.merged, "delete.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("deleted lower file delete.txt is visible again after restore (err %v)", err)
	}
	entries, err := os.ReadDir(filepath.Join(second.merged, "olddir"))
	snapMust(t, err)
	if len(entries) != 1 || entries[0].Name() != "fresh" {
		t.Errorf("opaque olddir shows %v, want only [fresh] (lower a, b hidden)", entries)
	}
	data, err := os.ReadFile(filepath.Join(second.merged, "modify.txt"))
	snapMust(t, err)
	if string(data) != "changed in the box\n" {
		t.Errorf("modify.txt = %q after restore", data)
	}
	if data, _ := os.ReadFile(filepath.Join(lower, "modify.txt")); string(data) != "original\n" {
		t.Errorf("lower modify.txt changed to %q", data)
	}
}

// TestSnapshotRoundTripKeepsOverlayXattrs checks the overlay metadata set
// directly on an upper dir: opaque and whiteouts travel; origin (a file
// handle) and redirect (the box mounts overlays redirect_dir=nofollow, and
// a restore refuses one) are dropped when the snapshot is taken.
func TestSnapshotRoundTripKeepsOverlayXattrs(t *testing.T) {
	snapRequireRoot(t)
	dir := t.TempDir()
	upper := filepath.Join(dir, "upper")
	snapWrite(t, filepath.Join(upper, "moved", "f"), "f\n", 0o644)
	snapMust(t, unix.Setxattr(filepath.Join(upper, "moved"), "trusted.overlay.redirect", []byte("/original"), 0))
	defer func() {
		buf := make([]byte, 64)
		if _, err := unix.Getxattr(filepath.Join(dir, "restored", "moved"), "trusted.overlay.redirect", buf); !errors.Is(err, unix.ENODATA) {
			t.Errorf("trusted.overlay.redirect travelled in the snapshot: err %v", err)
		}
	}()
	snapMust(t, os.MkdirAll(filepath.Join(upper, "opaque"), 0o755))
	snapMust(t, unix.Setxattr(filepath.Join(upper, "opaque"), "trusted.overlay.opaque", []byte("y"), 0))
	snapMust(t, unix.Setxattr(filepath.Join(upper, "opaque"), "trusted.overlay.origin", []byte{0, 1, 2}, 0))
	snapMust(t, unix.Mknod(filepath.Join(upper, "gone"), unix.S_IFCHR, 0))
	snapMust(t, unix.Setxattr(filepath.Join(upper, "moved", "f"), "user.mime", []byte("text/plain"), 0))

	restored := filepath.Join(dir, "restored")
	snapRoundTrip(t, upper, restored)
	snapDiff(t, "restored upper layer", snapDescribe(t, upper), snapDescribe(t, restored))

	buf := make([]byte, 64)
	if _, err := unix.Getxattr(filepath.Join(restored, "opaque"), "trusted.overlay.origin", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("trusted.overlay.origin (a file handle of the old filesystem) was restored: err %v", err)
	}
	var st unix.Stat_t
	snapMust(t, unix.Lstat(filepath.Join(restored, "gone"), &st))
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("whiteout gone restored as mode %o rdev %d, want char device 0:0", st.Mode, st.Rdev)
	}
}

// TestSnapshotForkDivergesIndependently restores one snapshot into two
// task uppers and checks that each sees only its own later changes.
func TestSnapshotForkDivergesIndependently(t *testing.T) {
	snapRequireRoot(t)
	dir := t.TempDir()
	lower := filepath.Join(dir, "lower")
	snapBuildLower(t, lower)
	origin := snapMountOverlay(t, filepath.Join(dir, "origin"), lower, filepath.Join(dir, "origin", "upper"))
	snapChangeThroughMerged(t, origin.merged)
	origin.unmount()

	store := &Store{Dir: filepath.Join(dir, "home", "boxes", "snapshots")}
	m, err := store.Create("task-origin", origin.upper, Origin{BaseImage: "host"})
	snapMust(t, err)

	var forks [2]*snapOverlay
	for i, name := range []string{"fork-a", "fork-b"} {
		upper := filepath.Join(dir, name, "upper")
		if _, err := store.RestoreInto(m.ID, upper); err != nil {
			t.Fatalf("RestoreInto %s: %v", name, err)
		}
		forks[i] = snapMountOverlay(t, filepath.Join(dir, name), lower, upper)
	}
	snapWrite(t, filepath.Join(forks[0].merged, "only-a.txt"), "a\n", 0o644)
	snapWrite(t, filepath.Join(forks[0].merged, "modify.txt"), "fork a\n", 0o644)
	snapMust(t, os.Remove(filepath.Join(forks[1].merged, "keep.txt")))
	snapMust(t, os.Remove(filepath.Join(forks[1].merged, "work", "main.go")))

	if _, err := os.Stat(filepath.Join(forks[1].merged, "only-a.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("fork b sees fork a's new file (err %v)", err)
	}
	if data, _ := os.ReadFile(filepath.Join(forks[1].merged, "modify.txt")); string(data) != "changed in the box\n" {
		t.Errorf("fork b modify.txt = %q, want the snapshot's content", data)
	}
	for _, p := range []string{"keep.txt", "work/main.go"} {
		if _, err := os.Stat(filepath.Join(forks[0].merged, p)); err != nil {
			t.Errorf("fork a lost %s deleted only in fork b: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(lower, "keep.txt")); err != nil {
		t.Errorf("base image lost keep.txt: %v", err)
	}
}

func TestRestoreUpperRefusesNonEmptyTarget(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	snapWrite(t, filepath.Join(src, "a"), "a", 0o644)
	var archive bytes.Buffer
	snapMust(t, Archive(src, &archive))
	target := filepath.Join(dir, "target")
	snapWrite(t, filepath.Join(target, "precious"), "keep me", 0o644)
	err := Restore(&archive, target)
	if !errors.Is(err, ErrRestoreTargetNotEmpty) {
		t.Fatalf("Restore into non-empty dir: err %v, want ErrRestoreTargetNotEmpty", err)
	}
	if data, _ := os.ReadFile(filepath.Join(target, "precious")); string(data) != "keep me" {
		t.Errorf("existing file changed to %q", data)
	}
}

// TestRestoreUpperWithoutRootKeepsContent checks the unprivileged path
// (no whiteouts): contents, modes, symlinks and hardlinks still round-trip.
func TestRestoreUpperKeepsContentModesAndLinks(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	snapWrite(t, filepath.Join(src, "bin", "tool"), "#!/bin/sh\n", 0o755)
	snapWrite(t, filepath.Join(src, "secret"), "s", 0o600)
	snapWrite(t, filepath.Join(src, "big"), strings.Repeat("0123456789abcdef", 200_000), 0o644)
	snapMust(t, os.Link(filepath.Join(src, "big"), filepath.Join(src, "bin", "big-again")))
	snapMust(t, os.Symlink("bin/tool", filepath.Join(src, "tool")))
	snapMust(t, os.MkdirAll(filepath.Join(src, "ro"), 0o755))
	snapWrite(t, filepath.Join(src, "ro", "inside"), "i", 0o444)
	snapMust(t, os.Chmod(filepath.Join(src, "ro"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "ro"), 0o755) })
	restored := filepath.Join(dir, "restored")
	snapRoundTrip(t, src, restored)
	t.Cleanup(func() { os.Chmod(filepath.Join(restored, "ro"), 0o755) })
	snapDiff(t, "restored tree", snapDescribe(t, src), snapDescribe(t, restored))
}

// TestSnapshotArchiveIsStandardZstd checks that an archive holding an
// incompressible file (stored in raw zstd frames) round-trips and is read
// by the reference zstd and GNU tar tools, so users can inspect snapshots.
func TestSnapshotArchiveIsStandardZstd(t *testing.T) {
	dir := t.TempDir()
	upper := filepath.Join(dir, "upper")
	random := make([]byte, 1<<20+12345)
	_, err := crand.Read(random)
	snapMust(t, err)
	snapWrite(t, filepath.Join(upper, "blob.bin"), string(random), 0o644)
	snapWrite(t, filepath.Join(upper, "src", "main.go"), strings.Repeat("package main\n", 5000), 0o644)
	var archive bytes.Buffer
	snapMust(t, Archive(upper, &archive))
	if !bytes.Contains(archive.Bytes(), []byte(rawFrameHeader)) {
		t.Error("incompressible blob.bin was not stored in a raw frame")
	}
	restored := filepath.Join(dir, "restored")
	snapMust(t, Restore(bytes.NewReader(archive.Bytes()), restored))
	snapDiff(t, "restored tree", snapDescribe(t, upper), snapDescribe(t, restored))

	if _, err := exec.LookPath("zstd"); err != nil {
		t.Skip("zstd CLI not installed (apt-get install zstd); skipping the reference-decoder check")
	}
	archivePath := filepath.Join(dir, "snap.tar.zst")
	snapMust(t, os.WriteFile(archivePath, archive.Bytes(), 0o600))
	out, err := exec.Command("sh", "-c", "zstd -dc "+archivePath+" | tar -tvf -").CombinedOutput()
	if err != nil {
		t.Fatalf("zstd -dc | tar -t: %v\n%s", err, out)
	}
	for _, want := range []string{" blob.bin\n", " src/main.go\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tar listing lacks %s:\n%s", want, out)
			break
		}
	}
}
