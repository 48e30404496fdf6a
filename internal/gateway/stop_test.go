package gateway

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/procident"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// startFakeGateway starts shell as a child process and writes it as the
// gateway of a new HERMES_HOME.
func startFakeGateway(t *testing.T, shell string) (home string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command("sh", "-c", shell)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	start, _, err := procident.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	home = t.TempDir()
	b, _ := json.Marshal(PIDFile{PID: cmd.Process.Pid, StartTime: start, StartedAt: time.Now()})
	if err := os.WriteFile(PIDPath(home), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, cmd
}

// ignoresTERM reports whether pid has exec'd sleep with SIGTERM ignored.
func ignoresTERM(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil || !strings.Contains(string(b), "Name:\tsleep") {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "SigIgn:\t"); ok {
			mask, err := strconv.ParseUint(hex, 16, 64)
			return err == nil && mask&(1<<(15-1)) != 0
		}
	}
	return false
}

// `hermes gateway stop` with no gateway running says so and removes the
// stale pid file; it is not an error.
func TestStopWithoutGatewayRemovesStalePidFile(t *testing.T) {
	home := t.TempDir()
	b, _ := json.Marshal(PIDFile{PID: 1, StartTime: 1}) // pid 1 with another start time: not our gateway
	if err := os.WriteFile(PIDPath(home), b, 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	got, err := Stop(home, time.Minute, func(int) { called = true })
	if err != nil || got != NotRunning || called {
		t.Fatalf("Stop = %v, %v (draining called: %v), want NotRunning", got, err, called)
	}
	if _, err := os.Stat(PIDPath(home)); !os.IsNotExist(err) {
		t.Errorf("stale gateway.pid left: %v", err)
	}
}

// A gateway that exits on SIGTERM is Drained, and the person is told
// its pid while it drains.
func TestStopDrainsOnSIGTERM(t *testing.T) {
	home, cmd := startFakeGateway(t, "exec sleep 600")
	var drained int
	got, err := Stop(home, time.Hour, func(pid int) { drained = pid })
	if err != nil || got != Drained {
		t.Fatalf("Stop = %v, %v, want Drained", got, err)
	}
	if drained != cmd.Process.Pid {
		t.Errorf("draining called with pid %d, want %d", drained, cmd.Process.Pid)
	}
}

// A gateway that does not exit on SIGTERM within the timeout gets SIGKILL
// and its pid file is removed.
func TestStopKillsAfterTimeout(t *testing.T) {
	home, cmd := startFakeGateway(t, `trap "" TERM; exec sleep 600`)
	waitfor.Until(t, "the fake gateway to ignore SIGTERM", func() bool { return ignoresTERM(cmd.Process.Pid) })
	got, err := Stop(home, time.Millisecond, nil)
	if err != nil || got != Killed {
		t.Fatalf("Stop = %v, %v, want Killed", got, err)
	}
	if _, running := ReadPIDFile(home); running {
		t.Error("the gateway still runs")
	}
	if _, err := os.Stat(PIDPath(home)); !os.IsNotExist(err) {
		t.Errorf("gateway.pid left after the kill: %v", err)
	}
}
