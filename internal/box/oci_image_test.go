package box

import (
	"archive/tar"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// A box whose terminal.box_image is an OCI reference in a loopback
// registry sees exactly the tree of the image's three layers stacked:
// the file a later layer deleted is gone, the directory a later layer
// made opaque holds only that layer's file; the image's Env applies.
func TestBoxFromThreeLayerOCIImage(t *testing.T) {
	needBoxes(t)
	reg := ocitest.StartRegistry(t, false)
	base := append(ocitest.BusyboxFiles(t),
		ocitest.File{Name: "etc/a", Data: []byte("a\n")}, ocitest.File{Name: "etc/b", Data: []byte("b\n")},
		ocitest.File{Name: "opt/", Type: tar.TypeDir}, ocitest.File{Name: "opt/data/", Type: tar.TypeDir},
		ocitest.File{Name: "opt/data/x", Data: []byte("x\n")}, ocitest.File{Name: "opt/data/y", Data: []byte("y\n")},
		ocitest.File{Name: "bin/su-like", Mode: 0o4755, Data: []byte("#!/bin/sh\n")})
	l2 := []ocitest.File{{Name: "etc/", Type: tar.TypeDir}, {Name: "etc/.wh.a"}, {Name: "etc/c", Data: []byte("c\n")}}
	l3 := []ocitest.File{{Name: "opt/data/", Type: tar.TypeDir}, {Name: "opt/data/.wh..wh..opq"}, {Name: "opt/data/z", Data: []byte("z\n")}}
	cfg := v1.Config{Env: []string{"PATH=/bin", "IMAGE_VAR=from-image"}, WorkingDir: "/opt"}
	img := ocitest.Image(t, runtime.GOARCH, cfg, ocitest.Layer(t, base), ocitest.Layer(t, l2), ocitest.Layer(t, l3))
	ref := reg.Ref("hermes/three:v1")
	reg.Push(t, ref, img)
	e := startTestBox(t, func(o *Options) { o.Terminal.BoxImage = ref })
	res := e.run(t, `ls /etc/a /etc/b /etc/c 2>&1; echo --; ls /opt/data; echo --; echo "$IMAGE_VAR $PATH"; test -u /bin/su-like && echo SETUID; cat /etc/b`)
	want := "ls: /etc/a: No such file or directory\n/etc/b\n/etc/c\n--\nz\n--\nfrom-image /bin\nb\n"
	if res.ExitCode != 0 || string(res.Output) != want {
		t.Fatalf("box from %s: exit %d output\n%s\nwant\n%s", ref, res.ExitCode, res.Output, want)
	}
	// The box writes above the image; the image's layers stay as pulled.
	res = e.run(t, `echo new > /etc/b && rm /etc/c && cat /etc/b && ls /etc/c 2>/dev/null; echo rc=$?`)
	if string(res.Output) != "new\nrc=1\n" {
		t.Fatalf("writes in the box: %q", res.Output)
	}
	rec, err := ociimage.Open(e.home, ociimage.Options{}).Lookup(ref)
	if err != nil {
		t.Fatal(err)
	}
	lowers := ociimage.Open(e.home, ociimage.Options{}).LowerDirs(rec)
	if data, err := os.ReadFile(filepath.Join(lowers[2], "etc/b")); err != nil || string(data) != "b\n" {
		t.Fatalf("the base layer changed: %q %v", data, err)
	}
	u, err := ociimage.ReadBoxImage(e.m.StateDir("test-task"))
	if err != nil || u == nil || u.Digest != rec.Digest {
		t.Fatalf("the box does not record its image: %+v %v", u, err)
	}
}

// Two boxes from two images that share their base layer: the base is
// stored (and unpacked) once, and each box sees its own top layer.
func TestBoxesFromImagesSharingABaseLayer(t *testing.T) {
	needBoxes(t)
	reg := ocitest.StartRegistry(t, false)
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t))
	for _, n := range []string{"a", "b"} {
		top := ocitest.Layer(t, []ocitest.File{{Name: "only-" + n, Data: []byte(n + "\n")}})
		reg.Push(t, reg.Ref("hermes/"+n+":1"), ocitest.Image(t, runtime.GOARCH, v1.Config{}, base, top))
	}
	e := startTestBox(t, func(o *Options) { o.Terminal.BoxImage = reg.Ref("hermes/a:1") })
	opts := e.m.opts
	opts.Terminal.BoxImage = reg.Ref("hermes/b:1")
	m2, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	env2, err := m2.Open(waitfor.Context(t), "task-b")
	if err != nil {
		t.Fatal(err)
	}
	res := e.run(t, "ls /only-*")
	res2, err := env2.Exec(waitfor.Context(t), backend.ExecRequest{Command: "ls /only-*", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != "/only-a\n" || string(res2.Output) != "/only-b\n" {
		t.Fatalf("box a sees %q, box b %q", res.Output, res2.Output)
	}
	entries, err := os.ReadDir(filepath.Join(ociimage.Dir(e.home), "layers"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, d := range entries {
		if d.IsDir() {
			dirs = append(dirs, d.Name())
		}
	}
	if len(dirs) != 3 {
		t.Fatalf("layer directories = %v, want 3 (the shared base once)", dirs)
	}
	if got := strings.Count(strings.Join(dirs, " "), ".tmp-"); got != 0 {
		t.Fatalf("temporary directories left: %v", dirs)
	}
}
