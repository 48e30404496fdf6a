package cli

import (
	"archive/tar"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
)

// `hermes box image pull|ls|rm|prune` on images in a loopback registry:
// progress only on a terminal, sizes and users in ls, rm refusing an image
// a box uses, prune clearing an interrupted pull's leftovers.
func TestBoxImagePullLsRmPrune(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: image layers carry overlay whiteouts (character devices)")
	}
	reg := ocitest.StartRegistry(t, false)
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t))
	cfg := v1.Config{ExposedPorts: map[string]struct{}{"8000/tcp": {}}}
	reg.Push(t, reg.Ref("hermes/a:1"), ocitest.Image(t, runtime.GOARCH, cfg, base, ocitest.Layer(t, []ocitest.File{{Name: "a", Data: []byte("a")}})))
	reg.Push(t, reg.Ref("hermes/b:1"), ocitest.Image(t, runtime.GOARCH, v1.Config{}, base))
	ta := newTestApp(t, nil, "", true)
	if code := ta.run("box", "image", "pull", reg.Ref("hermes/a:1")); code != 0 {
		t.Fatalf("pull: %d %s", code, ta.stderr)
	}
	if !strings.Contains(ta.stderr.String(), "download [") || !strings.Contains(ta.stdout.String(), "terminal.box_image "+reg.Ref("hermes/a:1")) {
		t.Errorf("pull on a terminal: stdout %q stderr %q", ta.stdout, ta.stderr)
	}
	quiet := &testApp{App: ta.App, home: ta.home, stdout: ta.stdout, stderr: ta.stderr}
	quiet.IsTerminal = false
	if code := quiet.run("box", "image", "pull", reg.Ref("hermes/b:1")); code != 0 {
		t.Fatalf("pull b: %d %s", code, ta.stderr)
	}
	if ta.stderr.Len() != 0 {
		t.Errorf("pull without a terminal printed progress: %q", ta.stderr)
	}
	box := filepath.Join(ta.home, "boxes", "w1")
	if err := os.MkdirAll(box, 0o700); err != nil {
		t.Fatal(err)
	}
	rec, err := ociimage.Open(ta.home, ociimage.Options{}).Lookup(reg.Ref("hermes/a:1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.RecordBoxUsage(box, rec); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("box", "image", "ls"); code != 0 {
		t.Fatalf("ls: %d %s", code, ta.stderr)
	}
	lines := strings.Split(strings.TrimSpace(ta.stdout.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "hermes/a:1") || !strings.Contains(lines[1], "8000/tcp") || !strings.HasSuffix(lines[1], "w1") ||
		!strings.HasSuffix(lines[2], "-") || !strings.Contains(lines[2], " 1 ") {
		t.Fatalf("ls:\n%s", ta.stdout)
	}
	if code := ta.run("box", "image", "rm", reg.Ref("hermes/a:1")); code == 0 || !strings.Contains(ta.stderr.String(), "used by box(es) w1") {
		t.Fatalf("rm of an image a box uses: %d %s", code, ta.stderr)
	}
	if code := ta.run("box", "image", "rm", reg.Ref("hermes/b:1")); code != 0 || !strings.Contains(ta.stdout.String(), "freed 0 B") {
		t.Fatalf("rm b (its only layer is shared): %d %s %s", code, ta.stdout, ta.stderr)
	}
	leftover := filepath.Join(ociimage.Dir(ta.home), "layers", ".tmp-layer-killed")
	if err := os.MkdirAll(filepath.Join(leftover, "usr"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("box", "image", "prune"); code != 0 {
		t.Fatalf("prune: %d %s", code, ta.stderr)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("prune left an interrupted pull's directory: %v", err)
	}
	if code := ta.run("box", "image", "pull", "127.0.0.1:1/../x"); code == 0 || ta.stderr.Len() == 0 {
		t.Errorf("pull of a bad reference: %d %q", code, ta.stderr)
	}
}

// `hermes box exec --new --image REF` makes a persistent box on the
// image: its tree, its Env and WorkingDir; box ls shows the image and
// its ports; the box keeps its image on the next start; --image for an
// existing box on another base is refused.
func TestBoxExecNewImage(t *testing.T) {
	c := newBoxCLI(t)
	reg := ocitest.StartRegistry(t, false)
	files := append(ocitest.BusyboxFiles(t), ocitest.File{Name: "srv/", Type: tar.TypeDir}, ocitest.File{Name: "srv/app.txt", Data: []byte("from the image\n")})
	cfg := v1.Config{Env: []string{"PATH=/bin", "APP_MODE=test"}, WorkingDir: "/srv", ExposedPorts: map[string]struct{}{"8642/tcp": {}}}
	ref := reg.Ref("hermes/app:test")
	reg.Push(t, ref, ocitest.Image(t, runtime.GOARCH, cfg, ocitest.Layer(t, files)))
	out, stderr, code := c.run(t, "", "box", "exec", "--new", "--image", ref, "img1", "--", "sh", "-c", "pwd; echo $APP_MODE; cat app.txt; touch /srv/made-in-box")
	if code != 0 || out != "/srv\ntest\nfrom the image\n" {
		t.Fatalf("exec --new --image: %d %q %s", code, out, stderr)
	}
	out, stderr, code = c.run(t, "", "box", "exec", "img1", "--", "ls", "/srv")
	if code != 0 || out != "app.txt\nmade-in-box\n" {
		t.Fatalf("second exec (the box keeps its image and layer): %d %q %s", code, out, stderr)
	}
	out, _, _ = c.run(t, "", "box", "ls")
	if !strings.Contains(out, ref+" (ports 8642/tcp)") {
		t.Fatalf("box ls does not show the image:\n%s", out)
	}
	if _, _, code := c.run(t, "", "box", "exec", "--new", "plain", "--", "true"); code != 0 {
		t.Fatal("exec --new without --image failed")
	}
	if _, stderr, code := c.run(t, "", "box", "exec", "--new", "--image", ref, "plain", "--", "true"); code == 0 || !strings.Contains(stderr, "exists on another base") {
		t.Fatalf("--image on a box made without it: %d %s", code, stderr)
	}
	out, _, _ = c.run(t, "", "box", "image", "ls")
	if !strings.Contains(out, "img1") {
		t.Fatalf("box image ls does not name the box using the image:\n%s", out)
	}
}
