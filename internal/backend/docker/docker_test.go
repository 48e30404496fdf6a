package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/conformance"
)

// engine finds a working container CLI: HERMES_DOCKER_BINARY, docker, or
// podman (rootful, with runc: CI installs podman, runc and busybox-static),
// and imports a BusyBox image built from the host's static busybox. It
// skips with the reason when none works here.
func engine(t *testing.T) (binary, image string, environ []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the docker backend test drives a rootful engine")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed (apt-get install busybox-static): the test image is built from it")
	}
	conf := filepath.Join(t.TempDir(), "containers.conf")
	// runc (crun refuses hybrid cgroup hosts) and ulimits within this
	// machine's hard limits.
	if err := os.WriteFile(conf, []byte("[engine]\nruntime = \"runc\"\n[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	environ = append(os.Environ(), "CONTAINERS_CONF="+conf)
	var candidates []string
	if v := os.Getenv("HERMES_DOCKER_BINARY"); v != "" {
		candidates = append(candidates, v)
	}
	candidates = append(candidates, "docker", "podman")
	for _, c := range candidates {
		cmd := exec.Command(c, "version", "--format", "{{.Server.Version}}")
		cmd.Env = environ
		if cmd.Run() == nil {
			binary = c
			break
		}
	}
	if binary == "" {
		t.Skip("no container engine answers `version` (docker has no engine here; apt-get install podman runc)")
	}
	root := t.TempDir()
	for _, d := range []string{"bin", "tmp", "workspace", "proc", "dev", "sys", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, applet := range strings.Fields(string(list)) {
		_ = os.Symlink("busybox", filepath.Join(root, "bin", applet))
	}
	tarball := filepath.Join(t.TempDir(), "rootfs.tar")
	if out, err := exec.Command("tar", "-C", root, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	image = "localhost/hermes-conformance-busybox:latest"
	imp := exec.Command(binary, "import", "--change", "ENV PATH=/bin", tarball, image)
	imp.Env = environ
	if out, err := imp.CombinedOutput(); err != nil {
		t.Skipf("%s import failed: %v %s", binary, err, out)
	}
	probe := exec.Command(binary, "run", "--rm", image, "true")
	probe.Env = environ
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("%s cannot run containers on this machine: %v %s", binary, err, out)
	}
	return binary, image, environ
}

func TestConformance(t *testing.T) {
	binary, image, environ := engine(t)
	state := t.TempDir()
	t.Cleanup(func() { removeContainers(binary, environ, state) })
	conformance.Run(t, conformance.Target{Open: func(t *testing.T) backend.Backend {
		b, err := New(context.Background(), Config{Binary: binary, Image: image, Persistent: true, StateDir: state,
			Environ: environ, CPU: 1, MemoryMB: 512})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
}

// A non-persistent task's container is removed on close; the hardening
// flags are in force (no capabilities but the three Hermes keeps, no
// network when docker_network is false).
func TestContainerHardenedAndRemoved(t *testing.T) {
	binary, image, environ := engine(t)
	ctx := context.Background()
	b, err := New(ctx, Config{Binary: binary, Image: image, Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	e, err := b.Open(ctx, "hardening")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, backend.ExecRequest{Command: "grep CapEff /proc/self/status; ls /sys/class/net"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	// DAC_OVERRIDE (1), CHOWN (0), FOWNER (3) = 0xb.
	if !strings.Contains(out, "CapEff:\t000000000000000b") || strings.Contains(out, "eth0") {
		t.Fatalf("container not hardened as configured:\n%s", out)
	}
	id := e.(*env).id
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ps := exec.Command(binary, "ps", "-a", "-q", "--no-trunc")
	ps.Env = environ
	list, _ := ps.Output()
	if strings.Contains(string(list), id) {
		t.Fatalf("container %s left after Close", id)
	}
}

// removeContainers removes the containers a test's HERMES_HOME left
// (persistent ones are stopped, not removed, on close).
func removeContainers(binary string, environ []string, state string) {
	b := &Backend{cfg: Config{Binary: binary, Environ: environ, StateDir: state}}
	ids, _ := b.cli(context.Background(), nil, "ps", "-a", "-q", "--filter", "label=hermes-home="+b.homeLabel())
	for _, id := range strings.Fields(ids) {
		_, _ = b.cli(context.Background(), nil, "rm", "-f", id)
	}
}
