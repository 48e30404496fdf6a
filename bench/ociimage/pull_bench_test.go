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
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/config"
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

// TestMain lets the test binary act as the box init.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == wire.InitArg {
		os.Exit(initproc.InitMain())
	}
	os.Exit(m.Run())
}

// boxManager is a box Manager on home whose base is boxImage ("host" or
// an OCI reference), with a tmpfs layer (no disk image to copy) so that
// only the base differs.
func boxManager(b *testing.B, home, boxImage string) *box.Manager {
	persistent := false
	exe, _ := os.Executable()
	m, err := box.NewManager(box.Options{Home: home, Executable: exe, Terminal: config.TerminalConfig{Backend: "box", Cwd: b.TempDir(),
		ContainerCPU: 1, ContainerMemory: 256, ContainerDisk: 64, BoxPids: 128, ContainerPersistent: &persistent,
		BoxImage: boxImage, BoxWorkspace: "bind"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// createAndRun opens a new box of task on m and runs `true` in it,
// returning the wall time of both; the box is removed untimed.
func createAndRun(b *testing.B, m *box.Manager, task string) time.Duration {
	ctx := context.Background()
	t0 := time.Now()
	env, err := m.Open(ctx, task)
	if err != nil {
		b.Fatal(err)
	}
	if res, err := env.Exec(ctx, backend.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
		b.Fatal(err, res)
	}
	d := time.Since(t0)
	m.Remove(task)
	return d
}

// BenchmarkBoxCreateCachedImageVsHost times a new box + its first
// command from the 100 MiB image, already pulled, against one from the
// host tree, alternating in the same run (only the overlay lowers
// differ); reports the medians and image/host.
func BenchmarkBoxCreateCachedImageVsHost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (boxes with cgroups)")
	}
	if err := box.Preflight(); err != nil {
		b.Skip(err)
	}
	reg := ocitest.StartRegistry(b, false)
	ref := benchImage(b, reg)
	home := b.TempDir()
	if _, err := ociimage.Open(home, ociimage.Options{}).Pull(context.Background(), ref); err != nil {
		b.Fatal(err)
	}
	host, image := boxManager(b, home, "host"), boxManager(b, home, ref)
	createAndRun(b, host, "warm-host") // first starts pay one-time costs (wire warm-up, cgroup root)
	createAndRun(b, image, "warm-image")
	var hostDs, imageDs []time.Duration
	for i := 0; b.Loop(); i++ {
		hostDs = append(hostDs, createAndRun(b, host, fmt.Sprintf("host-%d", i)))
		imageDs = append(imageDs, createAndRun(b, image, fmt.Sprintf("image-%d", i)))
	}
	h, im := median(hostDs), median(imageDs)
	b.ReportMetric(h, "host-ms")
	b.ReportMetric(im, "image-ms")
	b.ReportMetric(im/h, "image/host")
}

// median of ds in milliseconds.
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
