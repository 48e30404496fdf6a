package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// imageEntry is one entry of a test tarball: a file (typ tar.TypeReg with
// body), a link (link), a directory or a device node (major, minor).
type imageEntry struct {
	name, link, body string
	typ              byte
	major, minor     int64
}

// imageTestTarball writes a small root filesystem tarball to path,
// compressed with compress ("gzip", "zstd" or "" for none).
func imageTestTarball(t *testing.T, path, compress string, entries ...imageEntry) {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch compress {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zstd":
		enc, err := zstd.NewWriter(&buf)
		must(t, err)
		w = enc
	default:
		w = imageNopCloser{&buf}
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o755, Devmajor: e.major, Devminor: e.minor}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		must(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			must(t, err)
		}
	}
	must(t, tw.Close())
	must(t, w.Close())
	must(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

type imageNopCloser struct{ io.Writer }

func (imageNopCloser) Close() error { return nil }

// imageTestRootfsEntries is a tiny Debian-like tree: merged /usr, a
// shell, a hardlink and a device node that must not be extracted.
func imageTestRootfsEntries() []imageEntry {
	return []imageEntry{
		{name: "./", typ: tar.TypeDir},
		{name: "./usr/", typ: tar.TypeDir},
		{name: "./usr/bin/", typ: tar.TypeDir},
		{name: "./usr/bin/sh", typ: tar.TypeReg, body: "#!fake shell\n"},
		{name: "./usr/bin/dash", typ: tar.TypeLink, link: "./usr/bin/sh"},
		{name: "./bin", typ: tar.TypeSymlink, link: "usr/bin"},
		{name: "./etc/", typ: tar.TypeDir},
		{name: "./etc/os-release", typ: tar.TypeReg, body: "ID=debian\n"},
		{name: "./dev/", typ: tar.TypeDir},
		{name: "./dev/null", typ: tar.TypeChar, major: 1, minor: 3},
	}
}

func imageFileSHA256(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	must(t, err)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func TestResolveImageHost(t *testing.T) {
	for _, spec := range []string{"", "host", " host "} {
		got, err := Resolve(t.TempDir(), spec)
		if err != nil || got != "/" {
			t.Errorf("Resolve(%q) = %q, %v; want /", spec, got, err)
		}
	}
}

func TestResolveImageDirectory(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	must(t, os.MkdirAll(filepath.Join(rootfs, "usr", "bin"), 0o755))
	got, err := Resolve(t.TempDir(), rootfs)
	if err != nil || got != rootfs {
		t.Errorf("Resolve(rootfs dir) = %q, %v; want %q", got, err, rootfs)
	}
	notRoot := filepath.Join(dir, "project")
	must(t, os.MkdirAll(filepath.Join(notRoot, "src"), 0o755))
	if _, err := Resolve(t.TempDir(), notRoot); err == nil || !strings.Contains(err.Error(), "not a root filesystem") {
		t.Errorf("Resolve(non-rootfs dir): err %v, want 'not a root filesystem'", err)
	}
	_, err = Resolve(t.TempDir(), filepath.Join(dir, "missing.tar.gz"))
	if err == nil || !strings.Contains(err.Error(), "hermes box image build") || !strings.Contains(err.Error(), "missing.tar.gz") {
		t.Errorf("Resolve(missing): err %v, want the path and the build hint", err)
	}
}

// TestResolveImageTarballExtractsOnce checks that a tarball is extracted
// into the content-addressed cache, device nodes skipped, and that later
// calls reuse the cache instead of extracting again.
func TestResolveImageTarballExtractsOnce(t *testing.T) {
	for _, compress := range []string{"gzip", "zstd", ""} {
		t.Run("compress="+compress, func(t *testing.T) {
			home := t.TempDir()
			tarball := filepath.Join(t.TempDir(), "image.tar")
			imageTestTarball(t, tarball, compress, imageTestRootfsEntries()...)
			root, err := Resolve(home, tarball)
			must(t, err)
			if want := filepath.Join(home, "boxes", "images", imageFileSHA256(t, tarball)); root != want {
				t.Fatalf("Resolve = %q, want %q", root, want)
			}
			if data, _ := os.ReadFile(filepath.Join(root, "bin", "sh")); string(data) != "#!fake shell\n" {
				t.Errorf("bin/sh through the bin symlink = %q", data)
			}
			a, errA := os.Stat(filepath.Join(root, "usr", "bin", "sh"))
			b, errB := os.Stat(filepath.Join(root, "usr", "bin", "dash"))
			if errA != nil || errB != nil || !os.SameFile(a, b) {
				t.Errorf("usr/bin/dash is not a hardlink of usr/bin/sh (%v, %v)", errA, errB)
			}
			if _, err := os.Lstat(filepath.Join(root, "dev", "null")); err == nil {
				t.Error("device node dev/null was extracted into the image")
			}
			marker := filepath.Join(root, "etc", "marker")
			must(t, os.WriteFile(marker, nil, 0o644))
			again, err := Resolve(home, tarball)
			must(t, err)
			if again != root {
				t.Errorf("second Resolve = %q, want %q", again, root)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("second Resolve extracted again (marker gone): %v", err)
			}
		})
	}
}

func TestResolveImageTarballChangedContentGetsNewDigest(t *testing.T) {
	home := t.TempDir()
	tarball := filepath.Join(t.TempDir(), "image.tar.zst")
	imageTestTarball(t, tarball, "zstd", imageTestRootfsEntries()...)
	first, err := Resolve(home, tarball)
	must(t, err)
	entries := append(imageTestRootfsEntries(), imageEntry{name: "./etc/hostname", typ: tar.TypeReg, body: "v2\n"})
	imageTestTarball(t, tarball, "zstd", entries...)
	second, err := Resolve(home, tarball)
	must(t, err)
	if second == first {
		t.Fatalf("rewritten tarball resolved to the old cache dir %s", first)
	}
	if data, _ := os.ReadFile(filepath.Join(second, "etc", "hostname")); string(data) != "v2\n" {
		t.Errorf("new image etc/hostname = %q", data)
	}
}

func TestResolveImageTarballRejectsBadArchives(t *testing.T) {
	cases := map[string][]imageEntry{
		"not a rootfs (one top-level dir)": {
			{name: "rootfs/", typ: tar.TypeDir},
			{name: "rootfs/usr/", typ: tar.TypeDir},
		},
		"climbs out": {
			{name: "usr/", typ: tar.TypeDir},
			{name: "../../escaped", typ: tar.TypeReg, body: "x"},
		},
		"writes through a symlink": {
			{name: "usr/", typ: tar.TypeDir},
			{name: "etc", typ: tar.TypeSymlink, link: "/etc"},
			{name: "etc/escaped", typ: tar.TypeReg, body: "x"},
		},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			tarball := filepath.Join(t.TempDir(), "bad.tar.gz")
			imageTestTarball(t, tarball, "gzip", entries...)
			if _, err := Resolve(home, tarball); err == nil || !strings.Contains(err.Error(), tarball) {
				t.Fatalf("Resolve: err %v, want an error naming %s", err, tarball)
			}
			left, _ := filepath.Glob(filepath.Join(home, "boxes", "images", "*"))
			for _, p := range left {
				if filepath.Base(p) != "tarballs" {
					t.Errorf("failed extraction left %s behind", p)
				}
			}
			if _, err := os.Stat("/etc/escaped"); err == nil {
				t.Error("archive wrote /etc/escaped")
			}
		})
	}
}

func TestDebianMirrorFromAptSources(t *testing.T) {
	apt := t.TempDir()
	writeTestFile(t, filepath.Join(apt, "sources.list"), "# nothing here\ndeb http://security.debian.org/debian-security bookworm-security main\n", 0o644)
	writeTestFile(t, filepath.Join(apt, "sources.list.d", "debian.sources"), `Types: deb
URIs: http://deb.example.org/debian-security
Suites: bookworm-security
Components: main

Types: deb-src deb
# comment line
URIs: http://mirror.example.org/debian/
Suites: bookworm bookworm-updates
Components: main
`, 0o644)
	if got := DebianMirror(apt, "bookworm"); got != "http://mirror.example.org/debian" {
		t.Errorf("DebianMirror(deb822) = %q", got)
	}
	writeTestFile(t, filepath.Join(apt, "sources.list"), "deb [arch=amd64 signed-by=/k.gpg] https://one-line.example/debian bookworm main\n", 0o644)
	if got := DebianMirror(apt, "bookworm"); got != "https://one-line.example/debian" {
		t.Errorf("DebianMirror(one-line with options) = %q", got)
	}
	if got := DebianMirror(apt, "trixie"); got != DefaultDebianMirror {
		t.Errorf("DebianMirror(unknown suite) = %q, want %q", got, DefaultDebianMirror)
	}
}

// TestBuildImageWithFakeDebootstrap runs the whole build pipeline with a
// stand-in debootstrap that makes a tiny tree, checking the arguments,
// the cached tarball, the manifest and resolution by name.
func TestBuildImageWithFakeDebootstrap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the build chroots and chowns")
	}
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	fake := filepath.Join(dir, "debootstrap")
	writeTestFile(t, fake, `#!/bin/sh
echo "$@" > `+argsFile+`
target="$3"
mkdir -p "$target/usr/bin" "$target/etc" "$target/dev"
echo 'ID=debian' > "$target/etc/os-release"
ln -s usr/bin "$target/bin"
mknod "$target/dev/null" c 1 3
echo "I: Base system installed successfully."
`, 0o755)
	apt := filepath.Join(dir, "apt")
	writeTestFile(t, filepath.Join(apt, "sources.list"), "deb http://mirror.test/debian bookworm main\n", 0o644)
	home := filepath.Join(dir, "home")
	var log bytes.Buffer
	m, err := Build(context.Background(), home, BuildOptions{Debootstrap: fake, AptDir: apt, Log: &log})
	must(t, err)
	args, _ := os.ReadFile(argsFile)
	if !strings.HasPrefix(string(args), "--variant=minbase bookworm ") || !strings.HasSuffix(strings.TrimSpace(string(args)), " http://mirror.test/debian") {
		t.Errorf("debootstrap args = %q", args)
	}
	if !strings.Contains(log.String(), "Base system installed") {
		t.Errorf("debootstrap output not passed to Log: %q", log.String())
	}
	if m.Name != "debian-bookworm-minbase" || m.Digest != imageFileSHA256(t, m.Tarball) {
		t.Errorf("manifest %+v does not match tarball", m)
	}
	root, err := Resolve(home, "debian-bookworm-minbase")
	must(t, err)
	if root != m.Rootfs {
		t.Errorf("Resolve(name) = %q, want %q", root, m.Rootfs)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "etc", "os-release")); string(data) != "ID=debian\n" {
		t.Errorf("built rootfs etc/os-release = %q", data)
	}
	if _, err := os.Lstat(filepath.Join(root, "dev", "null")); err == nil {
		t.Error("device node kept in the built image")
	}
	if byTarball, err := Resolve(home, m.Tarball); err != nil || byTarball != m.Rootfs {
		t.Errorf("Resolve(built tarball) = %q, %v; want %q", byTarball, err, m.Rootfs)
	}
}

// TestBuildImageDebootstrap builds a real bookworm minbase (about a minute,
// needs the Debian mirror); opt in with HERMES_TEST_DEBOOTSTRAP=1.
func TestBuildImageDebootstrap(t *testing.T) {
	if os.Getenv("HERMES_TEST_DEBOOTSTRAP") != "1" {
		t.Skip("set HERMES_TEST_DEBOOTSTRAP=1 to run debootstrap against the Debian mirror (~60 s)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the build chroots and chowns")
	}
	home := t.TempDir()
	m, err := Build(context.Background(), home, BuildOptions{Log: imageTestLog{t}})
	must(t, err)
	t.Logf("built %s: %d bytes, sha256 %s, mirror %s", m.Name, m.Size, m.Digest, m.Mirror)
	root, err := Resolve(home, m.Name)
	must(t, err)
	if data, err := os.ReadFile(filepath.Join(root, "etc", "debian_version")); err != nil || !strings.HasPrefix(string(data), "12") {
		t.Errorf("etc/debian_version = %q, %v; want 12.x", data, err)
	}
}

// imageTestLog sends debootstrap output to the test log.
type imageTestLog struct{ t *testing.T }

func (w imageTestLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestImageNames checks which names Build accepts: they name files in the
// image cache, so nothing that could leave it or hide as a dot file passes.
func TestImageNames(t *testing.T) {
	for _, ok := range []string{"debian-12.minbase", "a", "9", strings.Repeat("a", 64)} {
		if !isName(ok) {
			t.Errorf("isName(%q) = false, want accepted", ok)
		}
	}
	for _, bad := range []string{"", "Debian", strings.Repeat("a", 65), ".x", "-x", "_x", "a/b", "..", "a b"} {
		if isName(bad) {
			t.Errorf("isName(%q) = true, want rejected", bad)
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

// writeTestFile writes content to path with mode, creating parents.
func writeTestFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), mode))
}
