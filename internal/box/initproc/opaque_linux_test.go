package initproc

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEmptyAllInUpperRedoesForANewUpper: a persistent layer records the
// directories its upper shows empty; a replaced upper (a snapshot
// restore) or a changed list gets its opaque markers again.
func TestEmptyAllInUpperRedoesForANewUpper(t *testing.T) {
	layer := t.TempDir()
	hostA, hostB := t.TempDir(), t.TempDir()
	upper := filepath.Join(layer, "upper")
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	if opaqueCacheKey(upper, nil, true) == "" {
		t.Skip("the file system of TMPDIR reports no birth times")
	}
	opaque := func(p string) bool {
		buf := make([]byte, 8)
		n, err := unix.Lgetxattr(filepath.Join(upper, p), OpaqueXattr(true), buf)
		return err == nil && string(buf[:n]) == "y"
	}
	if err := EmptyAllInUpper(layer, []string{hostA}, true, true); err != nil {
		t.Fatal(err)
	}
	if !opaque(hostA) {
		t.Fatalf("%s is not opaque in the upper", hostA)
	}
	if err := EmptyAllInUpper(layer, []string{hostA, hostB}, true, true); err != nil {
		t.Fatal(err)
	}
	if !opaque(hostB) {
		t.Errorf("a directory added to the list was not made opaque")
	}
	// A restore replaces the upper with another directory.
	if err := os.Rename(upper, upper+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EmptyAllInUpper(layer, []string{hostA, hostB}, true, true); err != nil {
		t.Fatal(err)
	}
	if !opaque(hostA) || !opaque(hostB) {
		t.Errorf("the replaced upper did not get its opaque markers")
	}
}

// TestRealDirsSkipsSymlinks: a host "directory" that is a symlink (or
// lies under one) is not made empty in the box, so what is under it must
// still be covered.
func TestRealDirsSkipsSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	must(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	must(t, os.Symlink(real, filepath.Join(dir, "link")))
	got := RealDirs([]string{real, filepath.Join(dir, "link"), filepath.Join(dir, "link", "sub"), filepath.Join(dir, "missing")})
	if len(got) != 1 || got[0] != real {
		t.Errorf("realDirs = %q, want only %s", got, real)
	}
}

// TestEmptyAllInUpperRedoesWhenAHostDirAppears: a directory of the list
// that is missing on the host at one start (a home not made yet, a
// symlink the host later replaces by a directory) gets no opaque marker;
// when it is a real directory at the next start, the record must not
// vouch for it, or the box would see everything in it (and what is
// under it is no longer covered either, pruneHidden).
func TestEmptyAllInUpperRedoesWhenAHostDirAppears(t *testing.T) {
	layer := t.TempDir()
	upper := filepath.Join(layer, "upper")
	must(t, os.Mkdir(upper, 0o755))
	if opaqueCacheKey(upper, nil, true) == "" {
		t.Skip("the file system of TMPDIR reports no birth times")
	}
	hostRoot := t.TempDir()
	later := filepath.Join(hostRoot, "later") // missing at the first start
	linked := filepath.Join(hostRoot, "linked")
	must(t, os.Mkdir(filepath.Join(hostRoot, "target"), 0o755))
	must(t, os.Symlink(filepath.Join(hostRoot, "target"), linked)) // a symlink at the first start
	empty := []string{later, linked}
	must(t, EmptyAllInUpper(layer, empty, true, true))

	must(t, os.MkdirAll(filepath.Join(later, ".aws"), 0o700))
	must(t, os.Remove(linked))
	must(t, os.MkdirAll(filepath.Join(linked, ".ssh"), 0o700))
	if got := RealDirs(empty); len(got) != 2 {
		t.Fatalf("realDirs = %q, want both (now real directories)", got)
	}
	must(t, EmptyAllInUpper(layer, empty, true, true))
	for _, p := range empty {
		buf := make([]byte, 8)
		n, err := unix.Lgetxattr(filepath.Join(upper, p), OpaqueXattr(true), buf)
		if err != nil || string(buf[:n]) != "y" {
			t.Errorf("%s became a real host directory after the first start, but is not opaque in the upper (%v): the box sees its contents", p, err)
		}
	}
}

// TestEmptyAllInUpperCopiesMode: every directory made in the upper on the
// way to an emptied host directory has the host directory's permissions
// (the chmod calls upperMaker skips change nothing), whatever the umask,
// and belongs to the box's root, whoever owns the host one; the emptied
// ones are opaque.
func TestEmptyAllInUpperCopiesMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown and trusted.* xattrs need root")
	}
	host := t.TempDir()
	layer := t.TempDir()
	upper := filepath.Join(layer, "upper")
	tree := []struct {
		rel      string
		perm     os.FileMode
		uid, gid int
	}{
		{"a", 0o750, 1234, 0}, {"a/b", 0o700, 0, 0}, {"a/b/c", 0o775, 0, 5}, {"a/d", 0o711, 0, 0},
		{"a/d/e", 0o755, 4321, 4321}, {"f", 0o777, 0, 0},
	}
	for _, d := range tree {
		p := filepath.Join(host, d.rel)
		if err := os.Mkdir(p, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, d.uid, d.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, d.perm); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	old := unix.Umask(0o027)
	defer unix.Umask(old)
	empty := []string{filepath.Join(host, "a/b/c"), filepath.Join(host, "a/d"), filepath.Join(host, "a/d/e"), filepath.Join(host, "f")}
	if err := EmptyAllInUpper(layer, empty, false, false); err != nil {
		t.Fatal(err)
	}
	for _, d := range tree {
		p := filepath.Join(upper, host, d.rel)
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if st.Mode().Perm() != d.perm || sys.Uid != 0 || sys.Gid != 0 {
			t.Errorf("%s: %v %d:%d, want %v 0:0", d.rel, st.Mode().Perm(), sys.Uid, sys.Gid, d.perm)
		}
	}
	for _, p := range empty {
		buf := make([]byte, 8)
		if n, err := unix.Lgetxattr(filepath.Join(upper, p), OpaqueXattr(false), buf); err != nil || string(buf[:n]) != "y" {
			t.Errorf("%s is not opaque in the upper: %v", p, err)
		}
	}
}

// must fails the test on a non-nil err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
