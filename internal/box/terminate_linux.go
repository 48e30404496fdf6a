package box

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Processes lists the host pids of the processes of the box whose init
// (PID 1 inside) has host pid initPID, the init excluded: every process in
// the init's pid namespace, found through /proc/N/ns/pid. It is how a
// caller on the host sees what a box still runs, commands that outlived
// their exec (nohup ... &) included.
//
// It refuses (ErrNotBoxInit) a pid in the caller's own pid namespace: a
// box's init always has a namespace of its own, so such a pid is not one
// (a dead init's pid reused by a host process), and every process of the
// host would be listed.
func Processes(initPID int) ([]int, error) {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(initPID) + "/ns/pid")
	if err != nil {
		return nil, fmt.Errorf("box init %d: %w", initPID, err)
	}
	if self, err := os.Readlink("/proc/self/ns/pid"); err != nil || self == ns {
		return nil, fmt.Errorf("%w: pid %d is in this process's own pid namespace (%s)", ErrNotBoxInit, initPID, ns)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == initPID {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns && !zombie(e.Name()) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// ErrNotBoxInit: the pid given as a box's init is not one (Processes).
var ErrNotBoxInit = errors.New("not a box's init")

// TerminateProcesses sends SIGTERM to every process of the box of init
// initPID but the init (Processes), through pidfds so that a pid reused
// meanwhile is never signalled, and waits until they have all exited or
// grace has passed, whichever is first; it returns how many had not
// exited then (the box's Close kills them). This is the graceful half of
// a box stop, as `docker stop` signals a container before killing it;
// unlike there every process is signalled, not only the main one, since a
// box may run several servers started by separate execs.
func TerminateProcesses(initPID int, grace time.Duration) (left int, err error) {
	pids, err := Processes(initPID)
	if err != nil {
		return 0, err
	}
	var fds []unix.PollFd
	defer func() {
		for _, p := range fds {
			unix.Close(int(p.Fd))
		}
	}()
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // already gone
		}
		if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
			unix.Close(fd)
			continue
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	deadline := time.Now().Add(grace)
	for {
		open := fds[:0]
		for _, p := range fds {
			if p.Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
				unix.Close(int(p.Fd))
				continue
			}
			p.Revents = 0
			open = append(open, p)
		}
		fds = open
		wait := time.Until(deadline)
		if len(fds) == 0 || wait <= 0 {
			return len(fds), nil
		}
		// A pidfd polls readable when its process has exited (pidfd_open(2)).
		_, err := unix.Poll(fds, int(min(wait.Milliseconds()+1, 1<<30)))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return len(fds), err
		}
	}
}

// zombie reports whether process pid has exited and waits for its parent
// to reap it (state Z in /proc/PID/stat; the box init reaps it soon).
func zombie(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true // gone
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}
