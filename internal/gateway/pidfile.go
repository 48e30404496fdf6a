package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"github.com/hermes-go/hermes/internal/procident"
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

// Alive reports whether the process p names still runs (same pid, same
// start time, not a zombie).
func (p PIDFile) Alive() bool {
	return procident.Process{PID: p.PID, StartTime: p.StartTime}.Alive()
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
	start, _, err := procident.StartTime(pid)
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
	return procident.Process{PID: p.PID, StartTime: p.StartTime}.WaitExit(timeout)
}
