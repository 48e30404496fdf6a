package initproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// commandIO are the descriptors of a command being started: what the
// child gets (child, closed in the init once it runs) and the init's ends.
type commandIO struct {
	child  [3]int
	closes []int    // the init's copies of child descriptors
	out    *os.File // standard output (and error), or the terminal's master
	errOut *os.File // standard error when separate, else nil
	stdinW *os.File
	tty    *os.File
}

func (c *commandIO) closeChild() {
	for _, fd := range c.closes {
		unix.Close(fd)
	}
	c.closes = nil
}

func (c *commandIO) closeAll() {
	c.closeChild()
	for _, f := range []*os.File{c.out, c.errOut, c.stdinW} {
		if f != nil {
			f.Close()
		}
	}
}

// readPipe returns a pipe whose read end is non-blocking (os.File polls it,
// so finish can cut a drain short with a deadline); the command's end
// stays blocking.
func readPipe(name string) (*os.File, int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, err
	}
	return os.NewFile(uintptr(p[0]), name), p[1], nil
}

// commandFiles sets up the descriptors of e: pipes, or a terminal.
func (s *initServer) commandFiles(e *wire.ExecSpec) (*commandIO, error) {
	cio := &commandIO{}
	if e.TTY {
		master, peer, err := openPTY(e.Rows, e.Cols)
		if err != nil {
			return nil, err
		}
		in, err := unix.Dup(int(master.Fd()))
		if err != nil {
			master.Close()
			unix.Close(peer)
			return nil, err
		}
		unix.CloseOnExec(in)
		cio.child = [3]int{peer, peer, peer}
		cio.closes = []int{peer}
		cio.out, cio.tty, cio.stdinW = master, master, os.NewFile(uintptr(in), "box-command-tty-in")
		return cio, nil
	}
	out, w, err := readPipe("box-command-output")
	if err != nil {
		return nil, err
	}
	cio.out, cio.child, cio.closes = out, [3]int{s.devNull, w, w}, []int{w}
	if e.Stderr {
		errOut, ew, err := readPipe("box-command-stderr")
		if err != nil {
			cio.closeAll()
			return nil, err
		}
		cio.errOut, cio.child[2], cio.closes = errOut, ew, append(cio.closes, ew)
	}
	if e.Stdin {
		var in [2]int
		if err := unix.Pipe2(in[:], unix.O_CLOEXEC); err != nil {
			cio.closeAll()
			return nil, err
		}
		cio.child[0], cio.closes, cio.stdinW = in[0], append(cio.closes, in[0]), os.NewFile(uintptr(in[1]), "box-command-stdin")
	}
	return cio, nil
}

// openPTY opens a new pseudo-terminal of the box's devpts (its master,
// non-blocking, and its peer, to become the command's controlling
// terminal) of rows×cols.
func openPTY(rows, cols uint16) (*os.File, int, error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, -1, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return nil, -1, fmt.Errorf("unlock pty: %w", err)
	}
	peer, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		unix.Close(m)
		return nil, -1, fmt.Errorf("open pty peer: %w", errno)
	}
	if rows > 0 && cols > 0 {
		unix.IoctlSetWinsize(m, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}
	return os.NewFile(uintptr(m), "box-command-tty"), int(peer), nil
}

// start runs one command: a new session (and process group), output on
// pipes or a terminal, the box environment. It forks with
// syscall.ForkExec (clone(CLONE_VFORK|CLONE_VM), as os/exec does) and no
// os.Process or pidfd: the reaper owns the child's exit status.
func (s *initServer) start(c *initConn, id uint64, e *wire.ExecSpec) error {
	if len(e.Argv) == 0 {
		return errors.New("empty command")
	}
	argv0 := e.Argv[0]
	if e.Search {
		var err error
		if argv0, err = lookPathIn(argv0, e.Env); err != nil {
			return err
		}
	}
	cio, err := s.commandFiles(e)
	if err != nil {
		return err
	}
	attr := &syscall.ProcAttr{Dir: e.Dir, Env: e.Env, Files: []uintptr{uintptr(cio.child[0]), uintptr(cio.child[1]), uintptr(cio.child[2])},
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: e.TTY}}
	if e.RunAs != nil {
		attr.Sys.Credential = &syscall.Credential{Uid: e.RunAs.UID, Gid: e.RunAs.GID, Groups: []uint32{}}
	}
	p := &initProc{id: id, conn: c, stdin: cio.stdinW, tty: cio.tty, status: make(chan unix.WaitStatus, 1), ended: make(chan struct{})}
	if cio.stdinW != nil {
		p.stdinQ = make(chan []byte, wire.StdinWindow+1)
	}
	fork := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c.attached && s.draining {
			err = wire.ErrDraining
			return
		}
		var pid int
		pid, err = syscall.ForkExec(argv0, e.Argv, attr)
		if err == nil {
			p.pid = pid
			s.procs[p.pid] = p
			c.byID[id] = p
		}
	}
	if c.attached {
		// Not the locked thread: its bounding set is the full one.
		s.onLockedThread(fork)
		defer s.noteUse()
	} else {
		fork()
	}
	cio.closeChild()
	if err != nil {
		cio.closeAll()
		return &os.PathError{Op: "fork/exec", Path: e.Argv[0], Err: err}
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if cio.stdinW != nil {
		go p.feedStdin(cio.stdinW)
	}
	var timer *time.Timer
	if e.Timeout > 0 {
		timer = time.AfterFunc(e.Timeout, func() {
			s.mu.Lock()
			p.timedOut = true
			s.mu.Unlock()
			killTree(p.pid)
		})
	}
	go s.finish(p, cio.out, cio.errOut, timer)
	return nil
}

// lookPathIn finds name in the PATH of env (KEY=VALUE lines) as
// execvp(3) does; a name with a slash is returned as it is.
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errNotInPath{}
}

// errNotInPath is lookPathIn's error (the host names the command).
type errNotInPath struct{}

func (errNotInPath) Error() string        { return "executable file not found in $PATH" }
func (errNotInPath) Is(target error) bool { return target == fs.ErrNotExist }

// feedStdin writes the stdin frames of p to the command's stdin, w, in
// order, and acknowledges each once written (or, after the command closed
// its stdin, discarded), which gives the sender room for one more frame
// (wire.StdinWindow). It closes w at the close frame, or once the command has
// ended and every frame queued is written (a background child may read
// them).
func (p *initProc) feedStdin(w *os.File) {
	defer w.Close()
	broken := false
	for {
		var data []byte
		select {
		case data = <-p.stdinQ: // what was sent before the command ended still goes
		default:
			select {
			case data = <-p.stdinQ:
			case <-p.ended:
				return
			}
		}
		if data == nil {
			return
		}
		if !broken {
			_, err := w.Write(data)
			broken = err != nil
		}
		p.conn.fc.Send(wire.Response{ID: p.id, Kind: wire.KindStdinAck})
	}
}

// pump sends what r yields as output frames of p (stream 1 or 2) until r
// ends (EOF, or EIO on a terminal whose peer is closed everywhere).
func (s *initServer) pump(p *initProc, r *os.File, stream int, done chan<- struct{}) {
	defer close(done)
	bp := s.buffers.Get().(*[]byte)
	defer s.buffers.Put(bp)
	buf := *bp
	send := func(n int) {
		p.conn.fc.Send(wire.Response{ID: p.id, Kind: wire.KindOutput, Data: append([]byte(nil), buf[:n]...), Stream: stream})
	}
	for {
		n, err := r.Read(buf)
		if n > 0 {
			send(n)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drainBuffered(r, buf, send)
			return
		}
		if err != nil {
			return
		}
	}
}

// drainBuffered sends what r's pipe already holds, without waiting for
// more. finish's grace deadline ends a pump whose pipe a background child
// keeps open; on a loaded machine the pump may not have run at all by
// then, and a read past the deadline fails without reading: the command's
// output, written before it exited, was lost (an `echo` answered "").
func drainBuffered(r *os.File, buf []byte, send func(int)) {
	if r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	for {
		n := 0
		if rc.Read(func(fd uintptr) bool {
			n, _ = unix.Read(int(fd), buf) // non-blocking: EAGAIN when empty
			return true
		}) != nil || n <= 0 {
			return
		}
		send(n)
	}
}

// finish streams the command's output, waits for its exit and reports it.
func (s *initServer) finish(p *initProc, out, errOut *os.File, timer *time.Timer) {
	// Sent here, not by start: the owner's starts run on the locked
	// thread, which must not wait for the owner's socket.
	p.conn.fc.Send(wire.Response{ID: p.id, Kind: wire.KindStarted, PID: p.pid})
	files := []*os.File{out}
	if errOut != nil {
		files = append(files, errOut)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var dones []chan struct{}
	for i, f := range files {
		d := make(chan struct{})
		dones = append(dones, d)
		go s.pump(p, f, i+1, d)
	}
	ws := <-p.status
	if timer != nil {
		timer.Stop()
	}
	grace := time.NewTimer(drainGrace)
	for i, d := range dones {
		select {
		case <-d:
		case <-grace.C:
			for _, f := range files[i:] {
				f.SetReadDeadline(time.Now())
			}
			<-d
		}
	}
	grace.Stop()
	s.mu.Lock()
	delete(p.conn.byID, p.id)
	timedOut := p.timedOut
	s.mu.Unlock()
	if p.conn.attached {
		defer s.noteUse()
		s.armIdle(p.conn)
	}
	close(p.ended)
	ex := wire.ExitInfo{Code: ws.ExitStatus(), TimedOut: timedOut}
	if ws.Signaled() {
		ex.Code = -1
		ex.Signal = unix.SignalName(ws.Signal())
	}
	p.conn.fc.Send(wire.Response{ID: p.id, Kind: wire.KindExit, Exit: ex})
}

// killTree SIGKILLs the command pid, its session and process group, and
// every process descending from it (found through /proc parent links).
func killTree(pid int) {
	for range 50 { // a fork bomb may refill the tree between rounds
		unix.Kill(-pid, unix.SIGKILL)
		unix.Kill(pid, unix.SIGKILL)
		parents := map[int]int{}
		sessions := map[int]int{}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			n, err := strconv.Atoi(e.Name())
			if err != nil || n == 1 {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			// fields after "comm)": state ppid pgrp session
			i := strings.LastIndexByte(string(b), ')')
			f := strings.Fields(string(b[i+1:]))
			if len(f) < 4 {
				continue
			}
			parents[n], _ = strconv.Atoi(f[1])
			sessions[n], _ = strconv.Atoi(f[3])
		}
		found := false
		for n := range parents {
			if sessions[n] == pid || descends(n, pid, parents) {
				unix.Kill(n, unix.SIGKILL)
				found = true
			}
		}
		if !found {
			return
		}
	}
}

// termChildren sends SIGTERM to the direct children of the command pid
// (what its wrapper shell runs: `docker stop` signals a container's main
// process the same way), or to pid itself when it has none. Deeper
// descendants are left to their parent's shutdown.
func termChildren(pid int) {
	entries, _ := os.ReadDir("/proc")
	found := false
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == 1 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			unix.Kill(n, unix.SIGTERM)
			found = true
		}
	}
	if !found {
		unix.Kill(pid, unix.SIGTERM)
	}
}

func descends(n, ancestor int, parents map[int]int) bool {
	for range 64 {
		p, ok := parents[n]
		if !ok || p <= 1 {
			return false
		}
		if p == ancestor {
			return true
		}
		n = p
	}
	return false
}
