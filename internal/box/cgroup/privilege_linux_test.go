package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/testio"
)

// nobodyUID is the unprivileged user the privilege tests run as.
const nobodyUID = 65534

// TestPrivilegeHelper is the body of TestCgroupAsNonRootSaysHowToFix in a
// copy of the test binary run as nobody: it prints Probe's error on the
// host's cgroups, then newCgroupV2's on a fake cgroup2 root owned by root.
func TestPrivilegeHelper(t *testing.T) {
	fake := os.Getenv("HERMES_CGROUP_PRIVILEGE_HELPER")
	if fake == "" {
		t.Skip("run by TestCgroupAsNonRootSaysHowToFix")
	}
	for _, err := range []error{Probe(fmt.Sprintf("hermes/.privilege-test-%d", os.Getpid())), func() error {
		_, err := newCgroupV2(fake, "hermes/task-1", Limits{})
		return err
	}()} {
		var pe *PrivilegeError
		fmt.Printf("privilege=%v: %v\n", errors.As(err, &pe), err)
	}
}

// A user who may not create cgroups (nobody, on the host's hierarchy and
// on a root-owned cgroup2 root) gets an error that says how to fix it:
// root, or on v2 a delegated subtree (systemd-run … Delegate=yes).
func TestCgroupAsNonRootSaysHowToFix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the test switches to uid 65534, which needs root")
	}
	dir, err := os.MkdirTemp("", "hermes-cgroup-priv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fake := filepath.Join(dir, "cgroup2")
	for _, d := range []string{fake, filepath.Join(fake, "hermes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "cgroup.test")
	testio.CopyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(bin, "-test.run=^TestPrivilegeHelper$", "-test.v")
	cmd.Env = []string{"HERMES_CGROUP_PRIVILEGE_HELPER=" + fake, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "privilege=") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("helper output:\n%s", out)
	}
	host, v2 := lines[0], lines[1]
	if strings.HasPrefix(host, "privilege=false: <nil>") {
		t.Logf("nobody may create cgroups on this host (delegated); only the fake root is checked")
	} else if !strings.HasPrefix(host, "privilege=true") || !strings.Contains(host, "run hermes as root") {
		t.Errorf("Probe as nobody on the host = %q, want a privilege error that says to run hermes as root", host)
	}
	if !strings.HasPrefix(v2, "privilege=true") || !strings.Contains(v2, "systemd-run --user --scope -p Delegate=yes hermes") ||
		!strings.Contains(v2, "run hermes as root") {
		t.Errorf("cgroup v2 as nobody = %q, want root or a delegated subtree as the fix", v2)
	}
}
