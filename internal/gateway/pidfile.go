package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// PIDFile is HERMES_HOME/gateway.pid: which process runs the gateway
// (`hermes gateway start|stop|status` read it).
// StartTime (field 22 of /proc/PID/stat, clock ticks since boot) tells
// the gateway from an unrelated process that reused its pid.
type PIDFile struct {
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"`
	StartedAt time.Time `json:"started_at"`
	Platforms []string  `json:"platforms"`
}

// PIDPath is the gateway's pid file of HERMES_HOME home (PIDFile).
func PIDPath(home string) string { return filepath.Join(home, "gateway.pid") }

func gatewayLockPath(home string) string { return filepath.Join(home, "gateway.lock") }

// LogPath is the log of a gateway started by `hermes gateway start`.
func LogPath(home string) string { return filepath.Join(home, "logs", "gateway.log") }

// procStartTime returns the start time of pid (/proc/PID/stat field 22)
// and whether it is a zombie (exited, not yet reaped).
func procStartTime(pid int) (start uint64, zombie bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return start, f[0] == "Z", err
}

// Alive reports whether the process p names still runs (same pid, same
// start time, not a zombie).
func (p PIDFile) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	start, zombie, err := procStartTime(p.PID)
	return err == nil && !zombie && start == p.StartTime
}

// ReadPIDFile returns the gateway of HERMES_HOME home and whether it is
// running.
func ReadPIDFile(home string) (PIDFile, bool) {
	var p PIDFile
	b, err := os.ReadFile(PIDPath(home))
	if err != nil || json.Unmarshal(b, &p) != nil {
		return PIDFile{}, false
	}
	return p, p.Alive()
}

// Claim makes this process the gateway of home: it takes the
// exclusive flock(2) on HERMES_HOME/gateway.lock for the life of the
// process (a second gateway on the same home is refused) and returns
// publish, which writes gateway.pid once the platforms are up, and
// release, which removes it.
func Claim(home string, now time.Time) (publish func(platforms []string) error, release func(), err error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(gatewayLockPath(home), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", gatewayLockPath(home), err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			msg := "a gateway is already running on " + home
			if p, ok := ReadPIDFile(home); ok {
				msg += fmt.Sprintf(" (pid %d)", p.PID)
			}
			return nil, nil, errors.New(msg + "; stop it with `hermes gateway stop`")
		}
		return nil, nil, fmt.Errorf("lock %s: %w", gatewayLockPath(home), err)
	}
	pid := os.Getpid()
	start, _, err := procStartTime(pid)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	publish = func(platforms []string) error {
		b, err := json.MarshalIndent(PIDFile{PID: pid, StartTime: start, StartedAt: now, Platforms: platforms}, "", "  ")
		if err != nil {
			return err
		}
		return renameio.WriteFile(PIDPath(home), append(b, '\n'), 0o600)
	}
	release = func() {
		if p, _ := ReadPIDFile(home); p.PID == pid {
			os.Remove(PIDPath(home))
		}
		f.Close()
	}
	return publish, release, nil
}

// WaitExit polls until p's process is gone or timeout passes.
func WaitExit(p PIDFile, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; {
		if !p.Alive() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
