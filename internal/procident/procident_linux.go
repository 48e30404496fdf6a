// Package procident names a process by its pid and its start time
// (field 22 of /proc/PID/stat, clock ticks since boot), so a pid file
// written by one process is never mistaken for an unrelated process that
// reused the pid later. The gateway's pid file and `hermes box start`'s
// owner records use it.
package procident

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Process is one process: its pid and start time.
type Process struct {
	PID       int
	StartTime uint64
}

// Self is the calling process.
func Self() (Process, error) {
	start, _, err := StartTime(os.Getpid())
	return Process{PID: os.Getpid(), StartTime: start}, err
}

// StartTime returns the start time of pid (/proc/PID/stat field 22) and
// whether it is a zombie (exited, not yet reaped). Errors: the process
// does not exist (fs.ErrNotExist) or its stat line is malformed.
func StartTime(pid int) (start uint64, zombie bool, err error) {
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

// Parent returns the parent pid of pid (/proc/PID/stat field 4).
func Parent(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.Atoi(f[1])
}

// Alive reports whether p still runs (same pid, same start time, not a
// zombie).
func (p Process) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	start, zombie, err := StartTime(p.PID)
	return err == nil && !zombie && start == p.StartTime
}

// WaitExit polls (every 50 ms) until p is gone or timeout passes, and
// reports whether it is gone.
func (p Process) WaitExit(timeout time.Duration) bool {
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
