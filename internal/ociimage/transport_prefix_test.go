package ociimage_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/hermes-go/hermes/internal/ociimage"
)

// TestTransportPrefixedSpecs: `box image pull /x/busybox.tar` prints and
// lists docker-archive:/x/busybox.tar; that name (and skopeo's oci:DIR)
// must work as a spec for --image, box_image and `image rm`, not be taken
// for a registry host "docker-archive".
func TestTransportPrefixedSpecs(t *testing.T) {
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
	rec, err := s.Pull(context.Background(), archive)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Ref != "docker-archive:"+archive {
		t.Fatalf("ref = %q", rec.Ref)
	}
	for _, spec := range []string{rec.Ref, "oci:" + dir, "oci-layout:" + dir} {
		if !ociimage.IsSpec(spec) {
			t.Fatalf("IsSpec(%q) = false", spec)
		}
		if _, err := s.Pull(context.Background(), spec); err != nil {
			t.Fatalf("pull %q: %v", spec, err)
		}
		if _, err := s.Lookup(spec); err != nil {
			t.Fatalf("lookup %q: %v", spec, err)
		}
	}
	if _, err := s.Remove(home, rec.Ref, false); err != nil {
		t.Fatalf("rm %s: %v", rec.Ref, err)
	}
	if _, err := s.Lookup(archive); err == nil {
		t.Fatal("image still there after rm of its listed name")
	}
	for spec, want := range map[string]string{"docker-archive:" + dir: "write oci-layout:" + dir,
		"docker-archive:/no/such.tar": "no such file"} {
		if _, err := s.Pull(context.Background(), spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("pull %q: %v, want %q", spec, err, want)
		}
	}
}
