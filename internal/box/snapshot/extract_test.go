package snapshot

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// snapEntry is one entry of a hand-made archive.
type snapEntry struct {
	name, link, body string
	typ              byte
	major, minor     int64
}

// snapArchive builds a tar.zst archive from entries, as an attacker could.
func snapArchive(t *testing.T, entries ...snapEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf)
	snapMust(t, err)
	tw := tar.NewWriter(enc)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Devmajor: e.major, Devminor: e.minor}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		snapMust(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			snapMust(t, err)
		}
	}
	snapMust(t, tw.Close())
	snapMust(t, enc.Close())
	return buf.Bytes()
}

// TestRestoreUpperRejectsTraversal feeds archives that try to write
// outside the target and checks each is refused and nothing lands outside.
func TestRestoreUpperRejectsTraversal(t *testing.T) {
	cases := []struct {
		name    string
		entries func(outside string) []snapEntry
		errLike string
	}{
		{"dotdot", func(string) []snapEntry {
			return []snapEntry{{name: "../escaped", typ: tar.TypeReg, body: "x"}}
		}, `climbs out`},
		{"dotdot in the middle", func(string) []snapEntry {
			return []snapEntry{{name: "a/../../escaped", typ: tar.TypeReg, body: "x"}}
		}, `climbs out`},
		{"absolute name", func(outside string) []snapEntry {
			return []snapEntry{{name: outside + "/escaped", typ: tar.TypeReg, body: "x"}}
		}, `absolute path`},
		{"write through symlink to outside dir", func(outside string) []snapEntry {
			return []snapEntry{
				{name: "link", typ: tar.TypeSymlink, link: outside},
				{name: "link/escaped", typ: tar.TypeReg, body: "x"},
			}
		}, `not a directory`},
		{"directory entry through symlink", func(outside string) []snapEntry {
			return []snapEntry{
				{name: "link", typ: tar.TypeSymlink, link: outside},
				{name: "link/", typ: tar.TypeDir},
				{name: "link/escaped", typ: tar.TypeReg, body: "x"},
			}
		}, `non-directory`},
		{"nested symlink parent", func(outside string) []snapEntry {
			return []snapEntry{
				{name: "d/", typ: tar.TypeDir},
				{name: "d/up", typ: tar.TypeSymlink, link: "../../" + filepath.Base(outside)},
				{name: "d/up/escaped", typ: tar.TypeReg, body: "x"},
			}
		}, `not a directory`},
		{"hardlink to outside file", func(outside string) []snapEntry {
			return []snapEntry{{name: "stolen", typ: tar.TypeLink, link: "../outside/victim"}}
		}, `climbs out`},
		{"hardlink through symlink", func(outside string) []snapEntry {
			return []snapEntry{
				{name: "link", typ: tar.TypeSymlink, link: outside},
				{name: "stolen", typ: tar.TypeLink, link: "link/victim"},
			}
		}, `not a directory`},
		{"device node", func(string) []snapEntry {
			return []snapEntry{{name: "null", typ: tar.TypeChar, major: 1, minor: 3}}
		}, `device node 1:3`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			outside := filepath.Join(dir, "outside")
			snapWrite(t, filepath.Join(outside, "victim"), "host file", 0o644)
			target := filepath.Join(dir, "target")
			err := Restore(bytes.NewReader(snapArchive(t, tc.entries(outside)...)), target)
			if err == nil || !strings.Contains(err.Error(), tc.errLike) {
				t.Fatalf("Restore: err %v, want one mentioning %q", err, tc.errLike)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Errorf("outside dir now holds %d entries, want only victim", len(entries))
			}
			if _, err := os.Lstat(filepath.Join(dir, "escaped")); err == nil {
				t.Errorf("archive wrote %s outside the target", filepath.Join(dir, "escaped"))
			}
			if data, _ := os.ReadFile(filepath.Join(outside, "victim")); string(data) != "host file" {
				t.Errorf("outside victim changed to %q", data)
			}
		})
	}
}

// TestRestoreUpperSymlinkTargetsStayInert checks that symlinks pointing
// outside are restored as links (the box resolves them against its own
// root) and later entries replace, never follow, them.
func TestRestoreUpperSymlinkTargetsStayInert(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	snapWrite(t, filepath.Join(outside, "victim"), "host file", 0o644)
	target := filepath.Join(dir, "target")
	archive := snapArchive(t,
		snapEntry{name: "etc-link", typ: tar.TypeSymlink, link: filepath.Join(outside, "victim")},
		snapEntry{name: "etc-link", typ: tar.TypeReg, body: "replaced the link, not its target"},
	)
	snapMust(t, Restore(bytes.NewReader(archive), target))
	if data, _ := os.ReadFile(filepath.Join(outside, "victim")); string(data) != "host file" {
		t.Errorf("write followed a symlink: outside victim is %q", data)
	}
	fi, err := os.Lstat(filepath.Join(target, "etc-link"))
	snapMust(t, err)
	if !fi.Mode().IsRegular() {
		t.Errorf("etc-link is %v, want the regular file from the later entry", fi.Mode())
	}
}

func TestSnapshotEntryName(t *testing.T) {
	for in, want := range map[string]string{"./": ".", "./a/b/": "a/b", "a//b": "a/b", "a/./b": "a/b", "dir/": "dir"} {
		got, err := entryName(in)
		if err != nil || got != want {
			t.Errorf("entryName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "..", "a/..", "../a", "a/../b", "a\x00b"} {
		if _, err := entryName(bad); err == nil {
			t.Errorf("entryName(%q) accepted", bad)
		}
	}
}

// TestRestoreUpperManyDirectories crosses the cached-descriptor limit
// (dirFDLimit) with files and hardlinks spread over many dirs.
func TestRestoreUpperManyDirectories(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for i := range dirFDLimit + 100 {
		snapWrite(t, filepath.Join(src, fmt.Sprintf("d%04d", i), "sub", "f"), fmt.Sprint(i), 0o644)
	}
	snapMust(t, os.Link(filepath.Join(src, "d0000", "sub", "f"), filepath.Join(src, fmt.Sprintf("d%04d", dirFDLimit+99), "link")))
	restored := filepath.Join(dir, "restored")
	snapRoundTrip(t, src, restored)
	snapDiff(t, "restored tree", snapDescribe(t, src), snapDescribe(t, restored))
}

// snapArchiveHeaders builds a tar.zst archive from raw headers (bodies are
// the header's size in 'x' bytes), as an attacker editing a snapshot could.
func snapArchiveHeaders(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf)
	snapMust(t, err)
	tw := tar.NewWriter(enc)
	for _, hdr := range hdrs {
		snapMust(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, err := tw.Write(bytes.Repeat([]byte("x"), int(hdr.Size)))
			snapMust(t, err)
		}
	}
	snapMust(t, tw.Close())
	snapMust(t, enc.Close())
	return buf.Bytes()
}

// TestRestoreUpperRefusesOverlayRedirects: a tampered snapshot whose
// entries carry overlay redirect or metacopy xattrs (which would make the
// restored layer show lower files the box hides, e.g. host /root) is
// refused, whichever entry type and xattr namespace carry them.
func TestRestoreUpperRefusesOverlayRedirects(t *testing.T) {
	snapRequireRoot(t)
	for _, tc := range []struct {
		attr, value string
		typ         byte
	}{
		{"trusted.overlay.redirect", "/root", tar.TypeDir},
		{"trusted.overlay.redirect", "../../etc", tar.TypeDir},
		{"user.overlay.redirect", "/root", tar.TypeDir},
		{"trusted.overlay.metacopy", "", tar.TypeReg},
		{"trusted.overlay.opaque", "../x", tar.TypeDir},
		{"trusted.overlay.upper", "x", tar.TypeReg},
	} {
		hdr := &tar.Header{Name: "exposed", Typeflag: tc.typ, Mode: 0o755,
			PAXRecords: map[string]string{paxXattrPrefix + tc.attr: tc.value}}
		if tc.typ == tar.TypeDir {
			hdr.Name = "exposed/"
		}
		target := filepath.Join(t.TempDir(), "upper")
		err := Restore(bytes.NewReader(snapArchiveHeaders(t, hdr)), target)
		if err == nil || !strings.Contains(err.Error(), tc.attr) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s=%q on a %c entry: got %v, want the snapshot refused naming the xattr", tc.attr, tc.value, tc.typ, err)
		}
	}
}

// TestRestoreUpperStripsSetIDAndCapabilities: files leaving a snapshot
// never carry setuid/setgid bits or file capabilities, whatever the
// archive says (a box must not plant a root program for the host).
func TestRestoreUpperStripsSetIDAndCapabilities(t *testing.T) {
	snapRequireRoot(t)
	capKey := paxXattrPrefix + "security.capability"
	archive := snapArchiveHeaders(t,
		&tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 3},
		&tar.Header{Name: "sgid", Typeflag: tar.TypeReg, Mode: 0o2755, Size: 3},
		&tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o6755, Size: inlineFileLimit + 1},
		&tar.Header{Name: "cap", Typeflag: tar.TypeReg, Mode: 0o755, Size: 3, PAXRecords: map[string]string{capKey: string(snapCapNetRaw())}},
		&tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o2775},
		&tar.Header{Name: "link", Typeflag: tar.TypeLink, Linkname: "suid"},
	)
	target := filepath.Join(t.TempDir(), "upper")
	if err := Restore(bytes.NewReader(archive), target); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"suid", "sgid", "big", "cap", "dir", "link"} {
		fi, err := os.Lstat(filepath.Join(target, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s restored with mode %v: setuid/setgid must be stripped", name, fi.Mode())
		}
	}
	buf := make([]byte, 64)
	if _, err := unix.Getxattr(filepath.Join(target, "cap"), "security.capability", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("security.capability was restored: err %v", err)
	}
}
