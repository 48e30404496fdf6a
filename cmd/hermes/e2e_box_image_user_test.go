package main_test

import (
	"archive/tar"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/testio"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// nobodyUID is the unprivileged account the test runs hermes as.
const nobodyUID = 65534

// An image's User cannot apply when hermes is not root (the box's user
// namespace has only root, mapped to the caller): hermes says so once,
// naming the image, its User and the fix, and the command runs as root
// in the box instead of failing or silently ignoring it.
func TestBoxImageUserWithoutRootWarnsOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the test switches to an unprivileged uid, which needs root")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		t.Skipf("no unprivileged user namespaces here: %v %s", err, out)
	}
	delegateCgroupsV1(t, nobodyUID)
	reg := ocitest.StartRegistry(t, false)
	ref := reg.Ref("hermes/app-user:test")
	accounts := ocitest.Layer(t, []ocitest.File{{Name: "etc/", Type: tar.TypeDir},
		{Name: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\napp:x:4242:4242::/tmp:/bin/sh\n")}})
	reg.Push(t, ref, ocitest.Image(t, runtime.GOARCH, v1.Config{Env: []string{"PATH=/bin"}, User: "app"},
		ocitest.Layer(t, ocitest.BusyboxFiles(t)), accounts))

	// Everything the unprivileged hermes touches is its own, under a 0755
	// directory it can reach (t.TempDir's are root's 0700).
	root, err := os.MkdirTemp("", "hermes-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	bin := filepath.Join(root, "hermes")
	testio.CopyExecutable(t, hermesBin, bin)
	home, userHome, work := filepath.Join(root, "hermes-home"), filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{root, home, userHome, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if d != root {
			if err := os.Chown(d, nobodyUID, nobodyUID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, "config.yaml")
	writeAbs(t, cfg, "terminal:\n  backend: box\n  cwd: "+work+"\n  container_memory: 512\n  container_disk: 256\n")
	if err := os.Chown(cfg, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	asNobody := func(args ...string) (string, string, error) {
		ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + userHome, "HERMES_HOME=" + home, "LANG=C.UTF-8"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	t.Cleanup(func() { asNobody("box", "rm", "img-user") })
	stdout, stderr, err := asNobody("box", "exec", "--new", "--image", ref, "img-user", "--", "sh", "-c", "id -u; id -u")
	if err != nil {
		t.Fatalf("box exec --new --image as uid %d: %v\nstdout %q\nstderr %s", nobodyUID, err, stdout, stderr)
	}
	if stdout != "0\n0\n" {
		t.Errorf("the box's commands ran as %q, want root in the user namespace (0)", stdout)
	}
	warning := `image ` + ref + ` sets User "app", which cannot apply without root: hermes runs as uid 65534`
	if n := strings.Count(stderr, warning); n != 1 || !strings.Contains(stderr, `run hermes as root to run them as "app"`) {
		t.Errorf("stderr has the warning %d times, want once with the fix:\n%s", n, stderr)
	}
}

// delegateCgroupsV1 lets uid make box groups under the boxes' cgroup
// root (box.DefaultCgroupRoot) of each cgroup v1 controller the box uses,
// as a delegation would, until the test ends. Skips t on cgroup v2,
// where a process of uid could not be moved there from the test's group.
func delegateCgroupsV1(t *testing.T, uid int) {
	t.Helper()
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		t.Skip("cgroup v2 (or no memory controller): delegating the box cgroups to an unprivileged uid is not set up by this test")
	}
	seen := map[string]bool{}
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct", "freezer"} {
		mount, err := filepath.EvalSymlinks(filepath.Join("/sys/fs/cgroup", c))
		if err != nil || seen[mount] {
			continue
		}
		seen[mount] = true
		dir := filepath.Join(mount, box.DefaultCgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Skipf("cgroup %s: %v", dir, err)
		}
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Skipf("delegate cgroup %s: %v", dir, err)
		}
		t.Cleanup(func() { os.Chown(dir, 0, 0) })
	}
}
