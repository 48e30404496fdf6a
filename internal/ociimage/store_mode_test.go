package ociimage_test

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// The attacker trial's F3: an image brings world-writable directories of
// its own (tmp, 1777); the store around them is its owner's alone, so no
// other local user plants files every box of the image sees, or reads
// the image records (their Env). A store made 0755 before is narrowed.
func TestImageStoreIsTheOwnersAlone(t *testing.T) {
	requireRoot(t)
	reg := ocitest.StartRegistry(t, false)
	img := ocitest.Image(t, runtime.GOARCH, v1.Config{Env: []string{"TOKEN=from-the-image"}},
		ocitest.Layer(t, append(ocitest.BusyboxFiles(t), ocitest.File{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777})))
	reg.Push(t, reg.Ref("hermes/modes:1"), img)
	s, home := newStore(t, ociimage.Options{})
	if err := os.MkdirAll(ociimage.Dir(home), 0o755); err != nil { // as a store made before
		t.Fatal(err)
	}
	if _, err := s.Pull(waitfor.Context(t), reg.Ref("hermes/modes:1")); err != nil {
		t.Fatal(err)
	}
	dir := ociimage.Dir(home)
	for _, d := range []string{dir, filepath.Join(dir, "layers"), filepath.Join(dir, "refs")} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, st.Mode().Perm(), err)
		}
	}
	records := 0
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && strings.HasSuffix(p, ".json") && filepath.Dir(filepath.Dir(p)) == dir {
			records++
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("record %s: mode %v, %v; want 0600", p, st.Mode().Perm(), err)
			}
		}
		return nil
	})
	if records < 2 {
		t.Errorf("found %d records under %s, want the image's and its layer's", records, dir)
	}
}
