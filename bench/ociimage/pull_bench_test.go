// Package ociimage_bench measures pulling and unpacking an OCI image
// from a loopback docker-registry: hermes's store (internal/ociimage)
// against `podman pull` into a fresh storage root, and a box create from
// the cached image against one from the host tree.
//
//	go test -run '^$' -bench . -benchtime 3x ./bench/ociimage
package ociimage_bench

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
)

// benchImage pushes a 5-layer image of about 100 MiB (80 files of
// 256 KiB a layer, half random and half zeros, so gzip halves it) and
// returns its reference.
func benchImage(b *testing.B, reg *ocitest.Registry) string {
	var layers []v1.Layer
	layers = append(layers, ocitest.Layer(b, ocitest.BusyboxFiles(b)))
	for l := range 5 {
		var files []ocitest.File
		files = append(files, ocitest.File{Name: fmt.Sprintf("data%d/", l), Type: tar.TypeDir})
		for f := range 80 {
			data := make([]byte, 256<<10)
			rand.Read(data[:128<<10])
			files = append(files, ocitest.File{Name: fmt.Sprintf("data%d/f%03d", l, f), Data: data})
		}
		layers = append(layers, ocitest.Layer(b, files))
	}
	ref := reg.Ref("bench/hundred:v1")
	reg.Push(b, ref, ocitest.Image(b, runtime.GOARCH, v1.Config{}, layers...))
	return ref
}

func BenchmarkPullUnpack100MB(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (overlay whiteouts, podman's storage)")
	}
	reg := ocitest.StartRegistry(b, false)
	ref := benchImage(b, reg)
	b.Run("hermes", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			home := b.TempDir()
			b.StartTimer()
			if _, err := ociimage.Open(home, ociimage.Options{}).Pull(context.Background(), ref); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("podman", func(b *testing.B) {
		podman, err := exec.LookPath("podman")
		if err != nil {
			b.Skip("podman missing")
		}
		// One storage root (under 50 characters, as podman wants) for all
		// runs, initialised before timing; the image is removed between runs.
		dir, err := os.MkdirTemp("/tmp", "pb")
		if err != nil {
			b.Fatal(err)
		}
		pm := func(args ...string) *exec.Cmd {
			return exec.Command(podman, append([]string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
				"--storage-driver", "overlay"}, args...)...)
		}
		defer func() {
			pm("system", "reset", "-f").Run()
			os.RemoveAll(dir)
		}()
		if out, err := pm("images").CombinedOutput(); err != nil {
			b.Fatalf("podman images: %v\n%s", err, out)
		}
		for b.Loop() {
			if out, err := pm("pull", "-q", "--tls-verify=false", ref).CombinedOutput(); err != nil {
				b.Fatalf("podman pull: %v\n%s", err, out)
			}
			b.StopTimer()
			if out, err := pm("rmi", "-f", ref).CombinedOutput(); err != nil {
				b.Fatalf("podman rmi: %v\n%s", err, out)
			}
			b.StartTimer()
		}
	})
}
