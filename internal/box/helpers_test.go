package box

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/config"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// testBoxEnv is a started box for one test, with its HERMES_HOME and
// workspace on the host.
type testBoxEnv struct {
	m         *Manager
	env       backend.Environment
	home      string
	workspace string
}

// needBoxes skips the test when this machine cannot run boxes (not root,
// not Linux, no overlayfs).
func needBoxes(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("box tests need root (cgroups, loop devices, namespaces)")
	}
	if err := Preflight(); err != nil {
		t.Skip(err)
	}
}

// testTerminal is a small box configuration for tests.
func testTerminal(workspace string) config.TerminalConfig {
	f := false
	return config.TerminalConfig{Cwd: workspace, ContainerCPU: 1, ContainerMemory: 256,
		ContainerDisk: 64, BoxPids: 128, ContainerPersistent: &f, BoxImage: "host", BoxWorkspace: "bind"}
}

// startTestBox starts a box with opts adjusted by edit; everything is
// stopped in t.Cleanup.
func startTestBox(t testing.TB, edit func(*Options)) *testBoxEnv {
	t.Helper()
	needBoxes(t)
	home := t.TempDir()
	ws := t.TempDir()
	opts := Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(ws), Home: home,
		InitBinary: os.Getenv(testInitEnv)}
	if edit != nil {
		edit(&opts)
	}
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := m.Open(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	return &testBoxEnv{m: m, env: env, home: home, workspace: ws}
}

// run executes command in the box and fails the test on box errors.
func (e *testBoxEnv) run(t testing.TB, command string) backend.ExecResult {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	res, err := e.env.Exec(ctx, backend.ExecRequest{Command: command, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	return res
}

// testCgroupRoot is this test process's own cgroup root
// (hermes/<pid>_<start>_boxtest), so that box test packages run at the
// same time as each other and as real hermes processes never share a
// group; TestMain removes it, and a sweep removes it if the test process
// was killed.
func testCgroupRoot() string {
	o, err := processOwner(os.Getpid())
	if err != nil {
		panic(err)
	}
	return filepath.Join(DefaultCgroupRoot, o.tag()+"_boxtest")
}

// removeTestCgroupRoot removes testCgroupRoot in every hierarchy, and
// reports the groups in it that still had processes.
func removeTestCgroupRoot() []string {
	var l Leftovers
	for _, dir := range hierarchyRoots(testCgroupRoot()) {
		if _, err := os.Stat(dir); err == nil {
			removeGroupTree(dir, &l)
		}
	}
	return l.Busy
}

// managerGroups lists the cgroup dirs of m's boxes and spares that exist,
// in every hierarchy.
func managerGroups(m *Manager) []string {
	var out []string
	prefix := m.owner.tag() + "_" + m.homeKey + "_"
	for _, dir := range hierarchyRoots(m.cgroupRoot) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

func trimmed(res backend.ExecResult) string { return strings.TrimSpace(string(res.Output)) }

func backendReq(command string) backend.ExecRequest { return backend.ExecRequest{Command: command} }

// must fails the test on a non-nil err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
