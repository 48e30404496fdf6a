package ociimage_test

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// threeLayerImage is busybox, then a layer deleting etc/a and adding
// etc/c, then one making opt/data opaque with only z in it.
func threeLayerImage(t *testing.T) (v1.Image, []v1.Layer) {
	base := append(ocitest.BusyboxFiles(t),
		ocitest.File{Name: "etc/a", Data: []byte("a\n")}, ocitest.File{Name: "etc/b", Data: []byte("b\n")},
		ocitest.File{Name: "opt/", Type: tar.TypeDir}, ocitest.File{Name: "opt/data/", Type: tar.TypeDir},
		ocitest.File{Name: "opt/data/x", Data: []byte("x\n")}, ocitest.File{Name: "opt/data/y", Data: []byte("y\n")},
		ocitest.File{Name: "bin/su-like", Mode: 0o4755, Data: []byte("#!/bin/sh\n")},
		ocitest.File{Name: "dev-null", Type: tar.TypeChar, Mode: 0o666},
		ocitest.File{Name: "bin/capped", Mode: 0o755, Data: []byte("cap\n"), PAX: map[string]string{"SCHILY.xattr.security.capability": "\x01\x00\x00\x02"}})
	l1 := ocitest.Layer(t, base)
	l2 := ocitest.Layer(t, []ocitest.File{{Name: "etc/", Type: tar.TypeDir}, {Name: "etc/.wh.a", Data: nil}, {Name: "etc/c", Data: []byte("c\n")}})
	l3 := ocitest.Layer(t, []ocitest.File{{Name: "opt/data/", Type: tar.TypeDir}, {Name: "opt/data/.wh..wh..opq"}, {Name: "opt/data/z", Data: []byte("z\n")}})
	cfg := v1.Config{Env: []string{"PATH=/bin", "IMAGE_VAR=from-image"}, WorkingDir: "/opt", User: "0:0",
		Cmd: []string{"sh"}, ExposedPorts: map[string]struct{}{"8080/tcp": {}}}
	return ocitest.Image(t, runtime.GOARCH, cfg, l1, l2, l3), []v1.Layer{l1, l2, l3}
}

func newStore(t *testing.T, opts ociimage.Options) (*ociimage.Store, string) {
	home := t.TempDir()
	return ociimage.Open(home, opts), home
}

// layerDirs lists the unpacked layers (and anything else) in the store.
func layerDirs(t *testing.T, home string) []string {
	entries, err := os.ReadDir(filepath.Join(ociimage.Dir(home), "layers"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: overlay whiteouts are character devices and opaque dirs trusted.* xattrs")
	}
}

func TestPullThreeLayerImageGivesTheRightTree(t *testing.T) {
	requireRoot(t)
	reg := ocitest.StartRegistry(t, false)
	img, _ := threeLayerImage(t)
	ref := reg.Ref("hermes/three:v1")
	reg.Push(t, ref, img)
	s, home := newStore(t, ociimage.Options{})
	var phases []string
	s2 := ociimage.Open(home, ociimage.Options{Progress: func(p ociimage.Progress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
	}})
	rec, err := s2.Pull(waitfor.Context(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Layers) != 3 || rec.Config.WorkingDir != "/opt" || rec.Config.ExposedPorts[0] != "8080/tcp" {
		t.Fatalf("record = %+v", rec)
	}
	if !strings.Contains(strings.Join(phases, ","), "download,unpack,done") {
		t.Errorf("progress phases = %v", phases)
	}
	lowers := s.LowerDirs(rec)
	// The whiteout and the opaque marker in overlay's format.
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(lowers[1], "etc/a"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Fatalf("etc/a in layer 2 is not a whiteout: %v %o", err, st.Mode)
	}
	val := make([]byte, 8)
	if n, err := unix.Lgetxattr(filepath.Join(lowers[0], "opt/data"), "trusted.overlay.opaque", val); err != nil || string(val[:n]) != "y" {
		t.Fatalf("opt/data in layer 3 is not opaque: %v", err)
	}
	// Stacked as a box stacks them: read-only overlay of the lowers.
	merged := t.TempDir()
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, "lowerdir="+strings.Join(lowers, ":")); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	defer unix.Unmount(merged, unix.MNT_DETACH)
	for dir, want := range map[string]string{"etc": "b c group passwd", "opt/data": "z"} {
		if got := names(t, filepath.Join(merged, dir)); got != want {
			t.Errorf("%s = %q, want %q", dir, got, want)
		}
	}
	for _, p := range []string{"bin/su-like", "bin/busybox"} {
		fi, err := os.Stat(filepath.Join(merged, p))
		if err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s: %v mode %v (setuid must be stripped)", p, err, fi.Mode())
		}
	}
	if _, err := os.Lstat(filepath.Join(merged, "dev-null")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("device node kept: %v", err)
	}
	if n, err := unix.Lgetxattr(filepath.Join(lowers[2], "bin/capped"), "security.capability", val); err == nil {
		t.Errorf("file capability kept (%d bytes)", n)
	}
}

func names(t *testing.T, dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestImagesSharingABaseLayerStoreItOnce(t *testing.T) {
	requireRoot(t)
	reg := ocitest.StartRegistry(t, false)
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t))
	a := ocitest.Image(t, runtime.GOARCH, v1.Config{}, base, ocitest.Layer(t, []ocitest.File{{Name: "a", Data: []byte("a")}}))
	b := ocitest.Image(t, runtime.GOARCH, v1.Config{}, base, ocitest.Layer(t, []ocitest.File{{Name: "b", Data: []byte("b")}}))
	reg.Push(t, reg.Ref("hermes/a:1"), a)
	reg.Push(t, reg.Ref("hermes/b:1"), b)
	s, home := newStore(t, ociimage.Options{})
	ra, err := s.Pull(waitfor.Context(t), reg.Ref("hermes/a:1"))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := s.Pull(waitfor.Context(t), reg.Ref("hermes/b:1"))
	if err != nil {
		t.Fatal(err)
	}
	if s.LowerDirs(ra)[1] != s.LowerDirs(rb)[1] {
		t.Fatalf("base layers differ: %v vs %v", s.LowerDirs(ra), s.LowerDirs(rb))
	}
	if got := layerDirs(t, home); len(got) != 3 {
		t.Fatalf("layers stored = %v, want 3 (the base once)", got)
	}
	list, err := s.List(home)
	if err != nil || len(list) != 2 || list[0].UniqueBytes >= list[0].Bytes {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// rm a keeps the shared base; rm b frees it.
	if _, err := s.Remove(home, reg.Ref("hermes/a:1"), false); err != nil {
		t.Fatal(err)
	}
	if got := layerDirs(t, home); len(got) != 2 {
		t.Fatalf("after rm a: layers = %v, want 2", got)
	}
	if err := os.MkdirAll(filepath.Join(home, "boxes", "w1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ociimage.RecordBoxUsage(filepath.Join(home, "boxes", "w1"), rb); err != nil {
		t.Fatal(err)
	}
	var inUse *ociimage.InUseError
	if _, err := s.Remove(home, reg.Ref("hermes/b:1"), false); !errors.As(err, &inUse) || inUse.Boxes[0] != "w1" {
		t.Fatalf("rm of an image a box uses: %v", err)
	}
	if _, err := s.Remove(home, reg.Ref("hermes/b:1"), true); err != nil {
		t.Fatal(err)
	}
	if got := layerDirs(t, home); len(got) != 2 {
		t.Fatalf("after rm --force b: layers = %v, want b's 2 (box w1 sits on them)", got)
	}
	if err := os.RemoveAll(filepath.Join(home, "boxes", "w1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if got := layerDirs(t, home); len(got) != 0 {
		t.Fatalf("after the box went and prune: layers = %v, want none", got)
	}
}

// assertNothingLeft fails when the store holds any layer, temporary
// entry or record.
func assertNothingLeft(t *testing.T, home string) {
	t.Helper()
	if got := layerDirs(t, home); len(got) != 0 {
		t.Errorf("layers dir after a refused pull = %v, want empty", got)
	}
	refs, _ := os.ReadDir(filepath.Join(ociimage.Dir(home), "refs"))
	if len(refs) != 0 {
		t.Errorf("refs after a refused pull: %d", len(refs))
	}
}

func TestTamperedLayerIsRefusedAndNothingLeft(t *testing.T) {
	reg := ocitest.StartRegistry(t, false)
	img, layers := threeLayerImage(t)
	ref := reg.Ref("hermes/tampered:v1")
	reg.Push(t, ref, img)
	d, err := layers[2].Digest()
	if err != nil {
		t.Fatal(err)
	}
	blob := reg.BlobPath(d)
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, home := newStore(t, ociimage.Options{})
	_, err = s.Pull(waitfor.Context(t), ref)
	if err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Fatalf("pull of a tampered layer: %v", err)
	}
	// Layers 1 and 2 were fine and stay (complete layers only); the bad
	// one left nothing, and the image has no record.
	for _, name := range layerDirs(t, home) {
		if strings.HasPrefix(name, ".tmp-") {
			t.Errorf("temporary entry left: %s", name)
		}
	}
	refs, _ := os.ReadDir(filepath.Join(ociimage.Dir(home), "refs"))
	if len(refs) != 0 {
		t.Errorf("a record was written for the refused image")
	}
}

func TestEscapingLayersAreRefused(t *testing.T) {
	requireRoot(t)
	reg := ocitest.StartRegistry(t, false)
	outside := t.TempDir()
	cases := map[string][]ocitest.File{
		"dotdot":            {{Name: "etc/", Type: tar.TypeDir}, {Name: "etc/../../escaped", Data: []byte("x")}},
		"absolute-symlink":  {{Name: "evil", Type: tar.TypeSymlink, Linkname: outside}, {Name: "evil/pwned", Data: []byte("x")}},
		"relative-symlink":  {{Name: "up", Type: tar.TypeSymlink, Linkname: "../../../../../../" + outside}, {Name: "up/pwned", Data: []byte("x")}},
		"hardlink-dotdot":   {{Name: "h", Type: tar.TypeLink, Linkname: "../../etc/passwd"}},
		"hardlink-absolute": {{Name: "h", Type: tar.TypeLink, Linkname: "/etc/shadow"}},
		// ".wh..." whiteouts "..": the directory above the entry's.
		"whiteout-dotdot": {{Name: "opt/data/.wh..."}},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			img := ocitest.Image(t, runtime.GOARCH, v1.Config{}, ocitest.Layer(t, files))
			ref := reg.Ref("hermes/" + name + ":v1")
			reg.Push(t, ref, img)
			s, home := newStore(t, ociimage.Options{})
			_, err := s.Pull(waitfor.Context(t), ref)
			if err == nil {
				t.Fatal("pull of an escaping layer succeeded")
			}
			t.Logf("refused: %v", err)
			assertNothingLeft(t, home)
			if got := names(t, outside); got != "" {
				t.Fatalf("written outside the layer: %s", got)
			}
		})
	}
}

func TestRegistryErrorsAreClear(t *testing.T) {
	reg := ocitest.StartRegistry(t, true)
	img := ocitest.Image(t, runtime.GOARCH, v1.Config{}, ocitest.Layer(t, []ocitest.File{{Name: "f", Data: []byte("f")}}))
	ref := reg.Ref("hermes/private:v1")
	reg.Push(t, ref, img)
	home := t.TempDir()
	t.Setenv("HOME", home) // no ~/.docker/config.json
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CONFIG_HOME", home)
	s := ociimage.Open(home, ociimage.Options{})
	_, err := s.Pull(waitfor.Context(t), ref)
	if err == nil || !strings.Contains(err.Error(), "refused access (HTTP 401)") || !strings.Contains(err.Error(), "login") {
		t.Fatalf("pull without credentials: %v", err)
	}
	assertNothingLeft(t, home)
	// Credentials from $REGISTRY_AUTH_FILE (podman's auth.json format).
	auth := filepath.Join(home, "auth.json")
	cred := "aGVybWVzOnMzY3JldC10ZXN0" // base64("hermes:s3cret-test")
	if err := os.WriteFile(auth, []byte(`{"auths":{"`+reg.Host+`":{"auth":"`+cred+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REGISTRY_AUTH_FILE", auth)
	_, err = s.Pull(waitfor.Context(t), reg.Ref("hermes/private:nosuchtag"))
	if err == nil || !strings.Contains(err.Error(), "no such image (HTTP 404)") {
		t.Fatalf("pull of a missing tag: %v", err)
	}
	if _, err := s.Pull(waitfor.Context(t), ref); err != nil {
		t.Fatalf("pull with REGISTRY_AUTH_FILE: %v", err)
	}
}

func TestImageForAnotherArchitectureIsRefused(t *testing.T) {
	reg := ocitest.StartRegistry(t, false)
	other := "s390x"
	if runtime.GOARCH == other {
		other = "arm64"
	}
	img := ocitest.Image(t, other, v1.Config{}, ocitest.Layer(t, []ocitest.File{{Name: "f", Data: []byte("f")}}))
	ref := reg.Ref("hermes/foreign:v1")
	reg.Push(t, ref, img)
	s, home := newStore(t, ociimage.Options{})
	_, err := s.Pull(waitfor.Context(t), ref)
	var perr *ociimage.PlatformError
	if !errors.As(err, &perr) || !strings.Contains(err.Error(), "linux/"+other) {
		t.Fatalf("pull of a %s image: %v", other, err)
	}
	assertNothingLeft(t, home)
}

func TestArchiveBombIsBoundedAndLeavesNothing(t *testing.T) {
	reg := ocitest.StartRegistry(t, false)
	img := ocitest.Image(t, runtime.GOARCH, v1.Config{}, ocitest.Layer(t, []ocitest.File{{Name: "zeros", Size: 12 << 20}}))
	ref := reg.Ref("hermes/bomb:v1")
	reg.Push(t, ref, img)
	s, home := newStore(t, ociimage.Options{MaxLayerBytes: 2 << 20})
	_, err := s.Pull(waitfor.Context(t), ref)
	if err == nil || !strings.Contains(err.Error(), "more than 2 MiB") {
		t.Fatalf("pull of a 12 MiB layer with a 2 MiB bound: %v", err)
	}
	assertNothingLeft(t, home)
}

func TestPullFromOCILayoutAndDockerArchive(t *testing.T) {
	requireRoot(t)
	img, _ := threeLayerImage(t)
	dir := filepath.Join(t.TempDir(), "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "saved.tar")
	tag, _ := name.NewTag("hermes/three:v1")
	if err := tarball.WriteToFile(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	s, home := newStore(t, ociimage.Options{})
	for _, spec := range []string{dir, archive} {
		if !ociimage.IsSpec(spec) {
			t.Fatalf("IsSpec(%s) = false", spec)
		}
		rec, err := s.Pull(context.Background(), spec)
		if err != nil {
			t.Fatalf("pull %s: %v", spec, err)
		}
		if len(rec.Layers) != 3 {
			t.Fatalf("%s: %d layers", spec, len(rec.Layers))
		}
	}
	if got := layerDirs(t, home); len(got) != 3 {
		t.Fatalf("layers = %v: the layout and the archive of one image share its layers", got)
	}
}

func TestIsSpec(t *testing.T) {
	// A root filesystem tarball and directory stay internal/box/image's.
	rootfsTar := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(rootfsTar, ocitest.TarBytes(t, []ocitest.File{{Name: "./", Type: tar.TypeDir}, {Name: "./bin/", Type: tar.TypeDir},
		{Name: "./bin/sh", Data: []byte("x")}, {Name: "./manifest.json", Data: []byte("{}")}}), 0o644); err != nil {
		t.Fatal(err)
	}
	if ociimage.IsSpec(rootfsTar) || ociimage.IsSpec(t.TempDir()) {
		t.Error("a rootfs tarball or directory was taken for an OCI image")
	}
	for spec, want := range map[string]bool{
		"host": false, "": false, "debian-bookworm-minbase": false, "./rootfs": false, "/nonexistent/rootfs.tar": false,
		"busybox:latest": true, "docker.io/nousresearch/hermes-agent:latest": true, "127.0.0.1:5000/x/y@sha256:" + strings.Repeat("a", 64): true,
	} {
		if got := ociimage.IsSpec(spec); got != want {
			t.Errorf("IsSpec(%q) = %v, want %v", spec, got, want)
		}
	}
}

// A layer that unpacks to more than the store's file system has free is
// refused before anything is unpacked, with an error that wraps ENOSPC.
func TestLayerTooBigForTheDiskIsRefusedBeforeUnpacking(t *testing.T) {
	requireRoot(t)
	reg := ocitest.StartRegistry(t, false)
	img := ocitest.Image(t, runtime.GOARCH, v1.Config{}, ocitest.Layer(t, []ocitest.File{{Name: "big", Size: 12 << 20}}))
	ref := reg.Ref("hermes/big:v1")
	reg.Push(t, ref, img)
	home := t.TempDir()
	if err := unix.Mount("tmpfs", home, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(home, unix.MNT_DETACH) })
	s := ociimage.Open(home, ociimage.Options{})
	_, err := s.Pull(waitfor.Context(t), ref)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "MiB free") {
		t.Fatalf("pull of a 12 MiB layer onto 4 MiB: %v", err)
	}
	assertNothingLeft(t, home)
}
