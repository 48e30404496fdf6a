package ociimage_test

import (
	"archive/tar"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
)

// tarLayout tars the OCI layout dir the way podman save --format
// oci-archive does: its entries (oci-layout, index.json, blobs/...) at
// the top, plus extra.
func tarLayout(t *testing.T, dir string, extra ...ocitest.File) string {
	t.Helper()
	var files []ocitest.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files = append(files, ocitest.File{Name: rel + "/", Type: tar.TypeDir, Mode: 0o755})
			return nil
		}
		b, err := os.ReadFile(p)
		files = append(files, ocitest.File{Name: rel, Mode: 0o644, Data: b})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image-oci.tar")
	if err := os.WriteFile(out, ocitest.TarBytes(t, append(files, extra...)), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// New-user trial: an OCI archive (podman save --format oci-archive,
// buildx type=oci) pulls like the layout it holds, by path and with the
// oci-archive: prefix, and its temporary unpacking is gone afterwards.
func TestPullFromOCIArchive(t *testing.T) {
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
	archive := tarLayout(t, dir)
	want, _ := img.Digest()
	s, home := newStore(t, ociimage.Options{})
	for _, spec := range []string{archive, "oci-archive:" + archive} {
		if !ociimage.IsSpec(spec) {
			t.Fatalf("IsSpec(%s) = false", spec)
		}
		rec, err := s.Pull(context.Background(), spec)
		if err != nil {
			t.Fatalf("pull %s: %v", spec, err)
		}
		if rec.Ref != "oci-archive:"+archive || rec.Source != "oci-archive" || rec.Digest != want.String() || len(rec.Layers) != 3 {
			t.Fatalf("pull %s: record %+v", spec, rec)
		}
	}
	if _, err := s.Pull(context.Background(), "oci-archive:"+dir); err == nil || !strings.Contains(err.Error(), "oci-layout:"+dir) {
		t.Errorf("oci-archive: of a layout dir: %v, want the spec to write", err)
	}
	entries, _ := os.ReadDir(ociimage.Dir(home))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".oci-archive-") {
			t.Errorf("the unpacked archive %s was left in the store", e.Name())
		}
	}
}

// An OCI archive is untrusted: a link (here blobs/x pointing out of the
// layout) or a path outside a layout is refused and nothing is left.
func TestOCIArchiveWithLinksIsRefused(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := threeLayerImage(t)
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string]ocitest.File{
		"symlink":  {Name: "blobs/sha256/evil", Type: tar.TypeSymlink, Linkname: "/etc/passwd"},
		"hardlink": {Name: "blobs/sha256/evil", Type: tar.TypeLink, Linkname: "../../../etc/passwd"},
		"escape":   {Name: "blobs/../../evil", Data: []byte("x")},
	} {
		archive := tarLayout(t, dir, extra)
		s, home := newStore(t, ociimage.Options{})
		if _, err := s.Pull(context.Background(), "oci-archive:"+archive); err == nil {
			t.Errorf("%s: an archive with %q was pulled", name, extra.Name)
		}
		assertNothingLeft(t, home)
		entries, _ := os.ReadDir(ociimage.Dir(home))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".oci-archive-") {
				t.Errorf("%s: %s left in the store", name, e.Name())
			}
		}
	}
}

// New-user trial: two names of one image (same digest; here a layout dir
// and an OCI archive of it, as a registry ref and its oci-layout copy)
// each list only the boxes made from that name.
func TestImageListShowsBoxesUnderTheirOwnName(t *testing.T) {
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
	archive := tarLayout(t, dir)
	s, home := newStore(t, ociimage.Options{})
	made := map[string]string{} // box → the spec it was made from
	for box, spec := range map[string]string{"from-layout": dir, "from-archive": archive} {
		rec, err := s.Pull(context.Background(), spec)
		if err != nil {
			t.Fatalf("pull %s: %v", spec, err)
		}
		state := filepath.Join(home, "boxes", box)
		if err := os.MkdirAll(state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := ociimage.RecordBoxUsage(state, rec); err != nil {
			t.Fatal(err)
		}
		made[box] = rec.Ref
	}
	list, err := s.List(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Digest != list[1].Digest {
		t.Fatalf("want two names of one digest, got %+v", list)
	}
	for _, row := range list {
		if len(row.Boxes) != 1 || made[row.Boxes[0]] != row.Ref {
			t.Errorf("%s lists boxes %v; want only the box made from it", row.Ref, row.Boxes)
		}
	}
}
