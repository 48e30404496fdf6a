package main_test

import (
	"archive/tar"
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// heldRegistry is a loopback proxy in front of a test registry that holds
// the download of one blob until released.
type heldRegistry struct {
	host      string
	requested chan struct{} // closed at the first GET of the blob
	release   chan struct{} // close to let it through
}

func holdBlob(t *testing.T, reg *ocitest.Registry, digest string) *heldRegistry {
	t.Helper()
	target, _ := url.Parse("http://" + reg.Host)
	h := &heldRegistry{requested: make(chan struct{}), release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var once sync.Once
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+digest) {
			once.Do(func() { close(h.requested) })
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.host = ln.Addr().String()
	return h
}

// box start --image pulls in the foreground: while the image's layer is
// still downloading no detached owner has been started (no box log), so
// a big image does not eat the wait for the box's readiness; once the
// pull ends the box starts from it. A pull that fails leaves nothing.
func TestBoxStartPullsImageBeforeDetaching(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	reg := ocitest.StartRegistry(t, false)
	layer := ocitest.Layer(t, append(ocitest.BusyboxFiles(t), ocitest.File{Name: "srv/", Type: tar.TypeDir},
		ocitest.File{Name: "srv/marker", Data: []byte("from the image\n")}))
	digest, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, reg.Ref("hermes/held:test"), ocitest.Image(t, runtime.GOARCH, v1.Config{Env: []string{"PATH=/bin"}}, layer))
	held := holdBlob(t, reg, digest.String())
	ref := held.host + "/hermes/held:test"

	e := newE2E(t)
	writeAbs(t, filepath.Join(e.home, "config.yaml"), "terminal:\n  backend: box\n  cwd: "+e.workspace+"\n  container_memory: 512\n  container_disk: 256\n")
	task := "held-pull-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { e.run("box", "stop", task); e.run("box", "rm", task) })
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	start, stdout, stderr := e.command(ctx, nil, "box", "start", "--image", ref, task)
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- start.Wait() }()
	select {
	case <-held.requested:
	case err := <-done:
		t.Fatalf("box start ended before it downloaded the layer: %v\nstdout %q\nstderr %s", err, stdout, stderr)
	}
	logPath := filepath.Join(e.home, "boxes-started", task+".log")
	if _, err := os.Stat(logPath); err == nil {
		t.Errorf("box start detached its owner (%s exists) while the image was still downloading", logPath)
	}
	close(held.release)
	if err := <-done; err != nil || strings.TrimSpace(stdout.String()) != task {
		t.Fatalf("box start --image %s: %v\nstdout %q\nstderr %s", ref, err, stdout, stderr)
	}
	if v := e.mustRun("box", "exec", task, "--", "cat", "/srv/marker"); v.stdout != "from the image\n" {
		t.Errorf("the started box's /srv/marker: %q", v.stdout)
	}

	missing := reg.Ref("hermes/nosuch:test")
	res := e.run("box", "start", "--image", missing, "nosuch-box")
	if res.code == 0 || !strings.Contains(res.stderr, "image "+missing) || !strings.Contains(res.stderr, "no such image") {
		t.Errorf("box start from a missing image:\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(e.home, "boxes-started", "nosuch-box.log")); err == nil {
		t.Errorf("a failed pull left a box log")
	}
}
