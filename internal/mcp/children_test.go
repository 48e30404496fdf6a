package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

// spawnHelper starts a long-lived helper process of the evil server (as
// servers that drive a browser or a language server do); it shares the
// server's stderr and its pid is written to pidFile.
func spawnHelper(pidFile string) {
	cmd := exec.Command("sleep", "300")
	cmd.Stderr = os.Stderr
	if cmd.Start() == nil {
		_ = os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	}
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// A host stdio server's own child processes end with the session: a
// helper that kept the server's stderr open outlived hermes and kept
// running after the server exited.
func TestHostServerChildrenEndWithSession(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep binary")
	}
	srv, count := evilEntry(t, "spawn")
	pidFile := count + ".pid"
	m, reg, _ := startManager(t, map[string]config.MCPServer{"evil": srv}, nil)
	if res := call(t, reg, "mcp__evil__ok", `{}`); res.IsError {
		t.Fatalf("call: %+v", res)
	}
	var pid int
	waitFor(t, "the helper's pid", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	m.Close()
	waitFor(t, "the server's helper to end", func() bool { return !alive(pid) })
}

// A failing server's stderr, told on hermes' stderr, cannot drive the
// terminal: its escape sequences are shown as text.
func TestStartWarningShowsEscapes(t *testing.T) {
	var mu sync.Mutex
	var warned []string
	srv := config.MCPServer{Command: "sh", Args: []string{"-c", `printf 'bad\033]52;c;aGk=\007 \033[2Jend' >&2; exit 1`}, ConnectTimeout: 30}
	startManager(t, map[string]config.MCPServer{"evil": srv}, func(o *Options) {
		o.Warn = func(s string) { mu.Lock(); warned = append(warned, s); mu.Unlock() }
	})
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(warned, "\n")
	if !strings.Contains(all, "bad") {
		t.Fatalf("the start failure was not told: %q", all)
	}
	if strings.ContainsAny(all, "\x1b\x07") {
		t.Errorf("a warning holds the server's escape sequences: %q", all)
	}
}
