package box

import (
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

var syscallZero = syscall.Signal(0)

// startHostSleeper starts a host process that must outlive the test's
// attacks; it is killed in t.Cleanup.
func startHostSleeper(t *testing.T) (*os.Process, error) {
	cmd := osexec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process, nil
}

func runHost(t *testing.T, name string, args ...string) ([]byte, error) {
	return osexec.Command(name, args...).CombinedOutput()
}

// hostProcessesWith lists host pids whose command line contains s.
func hostProcessesWith(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(st), ") Z") {
				continue // zombie: already dead
			}
			out = append(out, pid)
		}
	}
	return out
}
