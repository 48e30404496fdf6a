package gateway

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// StopOutcome says how Stop ended.
type StopOutcome int

const (
	// NotRunning: no gateway ran (a stale gateway.pid was removed).
	NotRunning StopOutcome = iota
	// Drained: the gateway exited on SIGTERM within the timeout.
	Drained
	// Killed: the gateway did not finish draining and got SIGKILL; its
	// running turns can be resumed.
	Killed
)

// killWait bounds the wait for a gateway to vanish after SIGKILL.
const killWait = 10 * time.Second

// Stop stops the gateway of HERMES_HOME home: SIGTERM (the gateway drains
// its running turns and exits), a wait of up to timeout for it to exit,
// then SIGKILL. draining, when not nil, is called with the gateway's pid
// once SIGTERM is sent. Stopping a gateway that does not run is not an
// error (NotRunning). The error names the pid when a signal fails or the
// process survives SIGKILL.
func Stop(home string, timeout time.Duration, draining func(pid int)) (StopOutcome, error) {
	p, running := ReadPIDFile(home)
	if !running {
		os.Remove(PIDPath(home)) // stale: its process is gone
		return NotRunning, nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		return NotRunning, fmt.Errorf("signal the gateway (pid %d): %w", p.PID, err)
	}
	if draining != nil {
		draining(p.PID)
	}
	if WaitExit(p, timeout) {
		return Drained, nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return NotRunning, fmt.Errorf("kill the gateway (pid %d): %w", p.PID, err)
	}
	if !WaitExit(p, killWait) {
		return NotRunning, fmt.Errorf("the gateway (pid %d) survived SIGKILL", p.PID)
	}
	os.Remove(PIDPath(home))
	return Killed, nil
}
