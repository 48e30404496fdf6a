package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// boxEnv is an Env for a HERMES_HOME whose config selects the box backend,
// with procfs real and the cgroup root at cgroupRoot.
func boxEnv(t *testing.T, cgroupRoot string) *Env {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(config.ConfigPath(home), []byte("terminal:\n  backend: box\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Home: home, Config: l, CgroupRoot: cgroupRoot, Offline: true}
}

// fakeCgroupV2 makes a cgroup v2 root whose cgroup.controllers lists ctrls.
func fakeCgroupV2(t *testing.T, ctrls string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(ctrls+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func find(t *testing.T, r Report, name string) Result {
	t.Helper()
	for _, x := range r.Results {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no %q result in %+v", name, r.Results)
	return Result{}
}

// A cgroup v2 root without the pids controller is ✗, names the missing
// controller and the root, and says how to enable it.
func TestCgroupControllerMissing(t *testing.T) {
	root := fakeCgroupV2(t, "cpuset cpu io memory")
	r := Run(context.Background(), boxEnv(t, root), Checks())
	got := find(t, r, "cgroup controllers")
	if got.Status != Fail || !strings.Contains(got.Detail, "pids") || !strings.Contains(got.Detail, root) {
		t.Fatalf("want ✗ naming pids and %s, got %+v", root, got)
	}
	if !strings.Contains(got.Fix, "+pids") || !strings.Contains(got.Fix, "subtree_control") {
		t.Errorf("the fix must say how to enable pids: %q", got.Fix)
	}
	if !r.Failed() {
		t.Error("a missing controller must fail the run")
	}
	var out bytes.Buffer
	r.Write(&out)
	if !strings.Contains(out.String(), "✗ cgroup controllers") || !strings.Contains(out.String(), "    fix: ") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestCgroupControllersPresent(t *testing.T) {
	root := fakeCgroupV2(t, "cpuset cpu io memory hugetlb pids rdma misc")
	got := find(t, Run(context.Background(), boxEnv(t, root), Checks()), "cgroup controllers")
	if got.Status != OK {
		t.Fatalf("want ✓, got %+v", got)
	}
}

// cgroup v1: each controller is a directory under the root.
func TestCgroupV1MissingController(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"memory", "cpu"} {
		if err := os.Mkdir(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := find(t, Run(context.Background(), boxEnv(t, root), Checks()), "cgroup controllers")
	if got.Status != Fail || !strings.Contains(got.Detail, "pids") {
		t.Fatalf("want ✗ naming pids, got %+v", got)
	}
}

// Landlock missing only warns: boxes apply it best effort.
func TestLandlockUnavailableWarns(t *testing.T) {
	e := boxEnv(t, fakeCgroupV2(t, "memory pids cpu"))
	e.LandlockABI = func() (int, error) { return 0, os.ErrNotExist }
	got := find(t, Run(context.Background(), e, Checks()), "Landlock")
	if got.Status != Warn || got.Fix == "" {
		t.Fatalf("want ⚠ with a fix, got %+v", got)
	}
}

// A configured private CA file that does not exist is ✗ naming the key.
func TestEgressCAFileMissing(t *testing.T) {
	e := boxEnv(t, fakeCgroupV2(t, "memory pids cpu"))
	e.Config.Config.Terminal.BoxNetwork.CAFile = "private-ca.pem"
	got := find(t, Run(context.Background(), e, Checks()), "egress CA")
	if got.Status != Fail || !strings.Contains(got.Detail, filepath.Join(e.Home, "private-ca.pem")) {
		t.Fatalf("want ✗ naming the file, got %+v", got)
	}
}

// The provider check asks the endpoint's /models (the fake model server)
// and reports a model it does not list as ⚠.
func TestProviderModels(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetModels(llmtest.Model{ID: "anthropic/claude-sonnet-4", ContextLength: 200000}, llmtest.Model{ID: "openai/gpt-5"})
	home := t.TempDir()
	env := map[string]string{"OPENROUTER_API_KEY": "sk-or-test", "OPENROUTER_BASE_URL": srv.URL}
	load := func(model string) *Env {
		cfg := "model:\n  provider: openrouter\n  default: " + model + "\n"
		if err := os.WriteFile(config.ConfigPath(home), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		return &Env{Home: home, Config: l}
	}
	if got := find(t, Run(context.Background(), load("anthropic/claude-sonnet-4"), Checks()), "provider /models"); got.Status != OK {
		t.Errorf("listed model: %+v", got)
	}
	if got := find(t, Run(context.Background(), load("openai/gpt-5"), Checks()), "provider /models"); got.Status != OK {
		t.Errorf("a model listed without a window (OpenAI's /models) is fine: %+v", got)
	}
	if got := find(t, Run(context.Background(), load("no/such-model"), Checks()), "provider /models"); got.Status != Warn {
		t.Errorf("unlisted model: %+v", got)
	}
	e := load("anthropic/claude-sonnet-4")
	e.Offline = true
	if got := find(t, Run(context.Background(), e, Checks()), "provider /models"); got.Status != Skip {
		t.Errorf("--offline must skip /models: %+v", got)
	}
	srv.Close()
	e.Offline = false
	if got := find(t, Run(context.Background(), e, Checks()), "provider /models"); got.Status != Fail || got.Fix == "" {
		t.Errorf("an endpoint that does not answer is ✗: %+v", got)
	}
}

// A corrupt state.db is ✗ with the file named.
func TestStoreCorrupt(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "state.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("not a database "), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	got := find(t, Run(context.Background(), &Env{Home: home}, Checks()), "state.db")
	if got.Status != Fail || !strings.Contains(got.Detail, db) {
		t.Fatalf("want ✗ naming %s, got %+v", db, got)
	}
}

// Not root on a kernel with unprivileged user namespaces switched off: ✗
// with the sysctl that enables them.
func TestUserNamespacesDisabledForNonRoot(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "sys", "kernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "sys", "kernel", "unprivileged_userns_clone"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := boxEnv(t, fakeCgroupV2(t, "memory pids cpu"))
	e.ProcRoot = proc
	e.Geteuid = func() int { return 1000 }
	got := find(t, Run(context.Background(), e, Checks()), "privileges")
	if got.Status != Fail || !strings.Contains(got.Fix, "unprivileged_userns_clone=1") {
		t.Fatalf("want ✗ with the sysctl fix, got %+v", got)
	}
	e.Geteuid = func() int { return 0 }
	if got := find(t, Run(context.Background(), e, Checks()), "privileges"); got.Status != OK {
		t.Errorf("root needs no user namespaces: %+v", got)
	}
}

// A missing HERMES_HOME is ⚠; --fix creates it with mode 0700.
func TestFixCreatesHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "hermes")
	e := &Env{Home: home}
	if got := find(t, Run(context.Background(), e, Checks()), "HERMES_HOME"); got.Status != Warn {
		t.Fatalf("missing home: %+v", got)
	}
	e.Fix = true
	got := find(t, Run(context.Background(), e, Checks()), "HERMES_HOME")
	st, err := os.Stat(home)
	if got.Status != OK || !got.Fixed || err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("--fix: %+v, %v %v", got, st, err)
	}
}

// --fix does not chmod a file of another user that .env points to (a
// symlink to /etc/passwd was made 0600, root running doctor --fix).
func TestFixLeavesOthersFilesAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	home, other := t.TempDir(), filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(other, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(home, ".env")); err != nil {
		t.Fatal(err)
	}
	e := &Env{Home: home, Fix: true}
	got := find(t, Run(context.Background(), e, Checks()), ".env permissions")
	st, err := os.Stat(other)
	if err != nil || st.Mode().Perm() != 0o644 || got.Fixed || got.Status != Fail || !strings.Contains(got.Detail, "uid 12345") {
		t.Fatalf("--fix: %+v; the other user's file is %v", got, st.Mode())
	}
}

// A custom endpoint without model.api_key is not reported as having a
// credential (doctor said "credential present" for one with no key).
func TestCustomEndpointWithoutKeyIsNotCalledCredentialed(t *testing.T) {
	home := t.TempDir()
	cfg := "model:\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  default: local-model\n"
	if err := os.WriteFile(config.ConfigPath(home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(home, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	got := find(t, Run(context.Background(), &Env{Home: home, Config: l, Offline: true}, Checks()), "provider")
	if strings.Contains(got.Detail, "credential present") || !strings.Contains(got.Detail, "no API key") {
		t.Errorf("custom endpoint without a key: %+v", got)
	}
}

// The local backend without root warns that guarded commands can read
// other processes' environments (no PID namespace), naming the fix; as
// root it is ✓.
func TestLocalProcessIsolation(t *testing.T) {
	home := t.TempDir()
	l, err := config.Load(home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Home: home, Config: l, Offline: true, Geteuid: func() int { return 1000 }}
	got := find(t, Run(context.Background(), e, Checks()), "local process isolation")
	if got.Status != Warn || !strings.Contains(got.Detail, "/proc/<pid>/environ") || !strings.Contains(got.Fix, ".env") {
		t.Fatalf("not root: want ⚠ naming environ and the fix, got %+v", got)
	}
	e.Geteuid = func() int { return 0 }
	if got := find(t, Run(context.Background(), e, Checks()), "local process isolation"); got.Status != OK {
		t.Fatalf("root: want ✓, got %+v", got)
	}
}

// Controllers being mounted is not enough: a user the kernel refuses a
// box cgroup (non-root on cgroup v1, v2 outside a delegated subtree) gets
// ✗ with the probe's fix, not ✓ and then a failing box exec.
func TestCgroupProbeRefusedFails(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"memory", "pids", "cpu"} {
		if err := os.Mkdir(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := boxEnv(t, root)
	e.CgroupProbe = func() error {
		return &cgroup.PrivilegeError{Err: fmt.Errorf("create cgroup %s/memory/hermes/x: %w", root, os.ErrPermission), Fix: "run hermes as root (sudo hermes …)"}
	}
	r := Run(context.Background(), e, Checks())
	got := find(t, r, "cgroup controllers")
	if got.Status != Fail || !strings.Contains(got.Detail, "permission denied") || got.Fix != "run hermes as root (sudo hermes …)" {
		t.Fatalf("want ✗ with the probe's error and fix, got %+v", got)
	}
	if !r.Failed() {
		t.Error("a refused cgroup must count as a problem")
	}
	e.CgroupProbe = func() error { return nil }
	if got := find(t, Run(context.Background(), e, Checks()), "cgroup controllers"); got.Status != OK {
		t.Fatalf("a probe that succeeds: want ✓, got %+v", got)
	}
}
