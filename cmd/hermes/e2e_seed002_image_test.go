package main_test

import (
	"archive/tar"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// Seed 002's SimpleBox(image=".../hermes-agent:...") as `hermes box start
// --image`: a hermes-agent image (BusyBox plus the hermes binary built
// from this tree) pushed to a loopback docker-registry; box start pulls it
// and runs its Entrypoint+Cmd in its WorkingDir with its Env as its User
// (a name from its /etc/passwd), box ls
// shows the image and its exposed port, `hermes --version` runs inside as
// the seed checks it, and box stop ends the box.
func TestSeed002BoxStartFromHermesAgentImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	reg := ocitest.StartRegistry(t, false)
	ref := reg.Ref("hermes-agent:test")
	cfg := v1.Config{
		Env:          []string{"PATH=/usr/local/bin:/bin", "SEED=002"},
		WorkingDir:   "/srv",
		User:         "nobody", // resolved from the image's /etc/passwd: 65534:65534
		Entrypoint:   []string{"/bin/sh", "-c"},
		Cmd:          []string{"pwd > /tmp/started; echo $SEED >> /tmp/started; exec sleep 3600"},
		ExposedPorts: map[string]struct{}{"8642/tcp": {}},
	}
	base := append(ocitest.BusyboxFiles(t), ocitest.File{Name: "srv/", Type: tar.TypeDir})
	reg.Push(t, ref, ocitest.Image(t, runtime.GOARCH, cfg, ocitest.Layer(t, base), ocitest.Layer(t, hermesLayerFiles(t))))

	e := newE2E(t)
	writeAbs(t, filepath.Join(e.home, "config.yaml"), "terminal:\n  backend: box\n  cwd: "+e.workspace+"\n  container_memory: 512\n  container_disk: 256\n")
	task := "seed002-img-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { e.run("box", "stop", task); e.run("box", "rm", task) })
	// The first start pulls and unpacks the image: wait on the test's
	// deadline rather than run's 30 s.
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	start, stdout, stderr := e.command(ctx, nil, "box", "start", "--image", ref, task)
	if err := start.Run(); err != nil || strings.TrimSpace(stdout.String()) != task {
		t.Fatalf("box start --image %s: %v\nstdout %q\nstderr %s", ref, err, stdout, stderr)
	}
	waitfor.Until(t, "the image's Entrypoint+Cmd to write /tmp/started", func() bool {
		return e.run("box", "exec", task, "--", "cat", "/tmp/started").stdout == "/srv\n002\n"
	})
	if v := e.mustRun("box", "exec", task, "--", "hermes", "--version"); !strings.HasPrefix(v.stdout, "Hermes Agent v") {
		t.Errorf("hermes --version in the box:\n%s", v)
	}
	if v := e.mustRun("box", "exec", task, "--", "sh", "-c", "command -v hermes; pwd; id -u; id -g; stat -c %u /tmp/started"); v.stdout != "/usr/local/bin/hermes\n/srv\n65534\n65534\n65534\n" {
		t.Errorf("hermes on the image's PATH, in its WorkingDir, as its User (and the Entrypoint too): %q", v.stdout)
	}
	ls := e.mustRun("box", "ls")
	if !strings.Contains(ls.stdout, ref+" (ports 8642/tcp)") || !strings.Contains(ls.stdout, "running (box start") {
		t.Errorf("box ls:\n%s", ls)
	}
	if res := e.mustRun("box", "stop", task); res.stdout != "stopped "+task+"\n" {
		t.Errorf("box stop:\n%s", res)
	}
	if ls := e.mustRun("box", "ls"); strings.Contains(ls.stdout, "running (box start") {
		t.Errorf("box ls after box stop:\n%s", ls)
	}
}

// hermesLayerFiles are usr/local/bin/hermes (the binary built from the
// tree) and the shared libraries ldd lists for it, at their host paths.
func hermesLayerFiles(t *testing.T) []ocitest.File {
	t.Helper()
	bin, err := os.ReadFile(hermesBin)
	if err != nil {
		t.Fatal(err)
	}
	files := []ocitest.File{{Name: "usr/local/", Type: tar.TypeDir}, {Name: "usr/local/bin/", Type: tar.TypeDir},
		{Name: "usr/local/bin/hermes", Mode: 0o755, Data: bin}}
	out, _ := exec.Command("ldd", hermesBin).Output() // "not a dynamic executable": exit 1, no libraries
	dirs := map[string]bool{}
	for _, field := range strings.Fields(string(out)) {
		if !strings.HasPrefix(field, "/") {
			continue
		}
		data, err := os.ReadFile(field)
		if err != nil {
			t.Fatalf("ldd %s lists %s: %v", hermesBin, field, err)
		}
		rel := strings.TrimPrefix(field, "/")
		var parents []ocitest.File // outermost first
		for d := filepath.Dir(rel); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			parents = append([]ocitest.File{{Name: d + "/", Type: tar.TypeDir}}, parents...)
		}
		files = append(append(files, parents...), ocitest.File{Name: rel, Mode: 0o755, Data: data})
	}
	return files
}
