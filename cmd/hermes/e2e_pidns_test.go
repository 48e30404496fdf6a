package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostPID maps a pid a command wrote ($$, $!) to the host's. As root, the
// local backend's commands run in a PID namespace of their own
// (internal/backend/local/pidns.go), where $$ is not the host's pid: it
// finds the process in another PID namespace whose innermost pid is pid
// and whose working directory is dir (each test has its own workspace).
// Not root, pid is the host's already. It fails the test rather than
// return a pid that may name an unrelated host process.
func hostPID(t *testing.T, pid int, dir string) int {
	t.Helper()
	if os.Geteuid() != 0 {
		return pid
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		host, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + ent.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			fields := strings.Fields(strings.TrimPrefix(line, "NSpid:"))
			if !strings.HasPrefix(line, "NSpid:") || len(fields) < 2 || fields[len(fields)-1] != strconv.Itoa(pid) {
				continue
			}
			if cwd, err := os.Readlink("/proc/" + ent.Name() + "/cwd"); err == nil && cwd == dir {
				return host
			}
		}
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil && !strings.Contains(string(status), "NSpid:") {
		return pid // no PID namespaces on this kernel
	}
	t.Fatalf("no process of pid %d (in the commands' PID namespace) works in %s", pid, dir)
	return 0
}
