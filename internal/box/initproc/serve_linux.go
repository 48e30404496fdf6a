package initproc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// outputChunk is the largest output frame sent to the host.
const outputChunk = 32 << 10

// drainGrace is how long the init keeps reading a command's output after
// the command exited, for background children still holding the pipe.
const drainGrace = 150 * time.Millisecond

// initServer is the request loop of a box's PID 1.
type initServer struct {
	main    *initConn // the owner's control connection
	conns   *net.UnixConn
	connsMu sync.Mutex
	spec    *wire.InitSpec

	// attachLn is the attach socket (spec.AttachSocket), served once the
	// host sends wire.OpJoined; nil when there is none.
	attachLn *net.UnixListener
	joined   bool // wire.OpJoined came (read and written by the serve loop only)

	devNull int       // /dev/null of the box, the stdin of commands without one
	buffers sync.Pool // *[]byte of outputChunk, for reading command output

	mu    sync.Mutex
	procs map[int]*initProc // by pid
	kick  chan struct{}
	// locked runs functions on the init's locked thread, the one whose
	// capability bounding set was emptied (dropBoundingSet): commands of
	// attached connections are forked there too.
	locked chan func()
	// attached are the open attached connections, and draining is set
	// once the owner is stopping the box (wire.OpDrain): no new attached
	// connection or command then (guarded by mu; attach_linux.go).
	attached map[*initConn]bool
	draining bool
	reportMu sync.Mutex // orders attached-use reports (reportAttached)
	// reportKick wakes the reporter (noteUse): room for one, as a report
	// sends the state current when it is sent, not when it was asked for.
	reportKick chan struct{}
}

// initConn is one connection that sends requests: the owner's control
// socket, or an attached process's connection (attach_linux.go). Request
// ids are per connection.
type initConn struct {
	fc       *wire.Conn
	attached bool
	byID     map[uint64]*initProc // guarded by initServer.mu
	// nc and uploads are an attached connection's socket and its
	// WriteFiles in parts under way (attach_linux.go), the latter used
	// by its request loop only.
	nc      net.Conn
	uploads map[string]*upload
}

// initProc is one running command.
type initProc struct {
	id       uint64
	pid      int
	conn     *initConn
	stdin    *os.File
	stdinQ   chan []byte   // nil entry = close stdin; room for wire.StdinWindow frames and the close
	ended    chan struct{} // closed by finish: nobody feeds the command's stdin any more
	tty      *os.File      // the pseudo-terminal's master (wire.ExecSpec.TTY), or nil
	status   chan unix.WaitStatus
	timedOut bool
}

// newInitServer returns the server of a box whose root is built (its
// /dev/null is opened once here, for every command's stdin).
func newInitServer(fc *wire.Conn, conns *net.UnixConn, spec *wire.InitSpec) (*initServer, error) {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/null: %w", err)
	}
	s := &initServer{main: &initConn{fc: fc, byID: map[uint64]*initProc{}}, conns: conns, spec: spec, devNull: null,
		procs: map[int]*initProc{}, kick: make(chan struct{}, 1), locked: make(chan func()),
		attached: map[*initConn]bool{}, reportKick: make(chan struct{}, 1)}
	s.buffers.New = func() any { b := make([]byte, outputChunk); return &b }
	return s, nil
}

// serve handles requests until the control socket closes, then kills
// every process of the box (returning from PID 1 ends the namespace). It
// runs on the init's locked thread (InitMain), where every command is
// forked: the owner's requests are handled here, and attached
// connections send their forks here (onLockedThread).
func (s *initServer) serve() {
	go s.reap()
	go s.reporter()
	reqs := make(chan wire.Request)
	go func() {
		defer close(reqs)
		for {
			var req wire.Request
			if err := s.main.fc.Receive(&req); err != nil {
				return
			}
			reqs <- req
		}
	}()
	for {
		select {
		case req, ok := <-reqs:
			if !ok {
				unix.Kill(-1, unix.SIGKILL)
				return
			}
			s.handle(s.main, req)
		case f := <-s.locked:
			f()
		}
	}
}

// onLockedThread runs f on the init's locked thread (serve's loop) and
// returns when it is done. f must not wait for a connection's peer.
func (s *initServer) onLockedThread(f func()) {
	done := make(chan struct{})
	s.locked <- func() {
		defer close(done)
		f()
	}
	<-done
}

// lookup returns the running command of request id on c, or nil.
func (s *initServer) lookup(c *initConn, id uint64) *initProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.byID[id]
}

func (s *initServer) handle(c *initConn, req wire.Request) {
	switch req.Op {
	case wire.OpExec:
		if req.Exec == nil {
			s.reply(c, wire.Response{ID: req.ID, Kind: wire.KindError, Err: "exec without a command"})
			return
		}
		if err := s.start(c, req.ID, req.Exec); err != nil {
			s.reply(c, wire.ErrorResponse(req.ID, err))
		}
	case wire.OpStdin, wire.OpCloseStdin:
		if p := s.lookup(c, req.ID); p != nil && p.stdinQ != nil {
			data := req.Data
			if req.Op == wire.OpCloseStdin {
				data = nil
			} else if data == nil {
				data = []byte{}
			}
			select {
			case p.stdinQ <- data:
			default:
				// More than wire.StdinWindow frames unacknowledged: the sender
				// broke the flow control (wire.StdinWindow), and its stream
				// cannot be kept whole. Killing the command says so
				// rather than feeding it a stream with a hole.
				io.WriteString(os.Stderr, "hermes box-init: stdin frame beyond the window: command killed\n")
				killTree(p.pid)
			}
		}
	case wire.OpKill:
		if p := s.lookup(c, req.ID); p != nil {
			killTree(p.pid)
		}
	case wire.OpSignal:
		if p := s.lookup(c, req.ID); p != nil {
			p.signal(req.Signal)
		}
	case wire.OpResize:
		if p := s.lookup(c, req.ID); p != nil {
			p.resize(req.Rows, req.Cols)
		}
	case wire.OpTerm:
		if p := s.lookup(c, req.ID); p != nil {
			termChildren(p.pid)
		}
	case wire.OpDial:
		if c.attached {
			c.fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: "dial on an attached connection: open a dial connection"})
			return
		}
		go s.dial(req)
	case wire.OpReadFile, wire.OpWriteFile, wire.OpStat, wire.OpReadDir, wire.OpChown:
		if c.attached {
			s.noteUse() // a use of the box, for the owner's idle timer
			if req.Op == wire.OpWriteFile {
				s.fileOp(c, req) // in order: its data may come in parts
				return
			}
		}
		go s.fileOp(c, req)
	case wire.OpDrain:
		if !c.attached {
			go s.drain(req.ID)
		}
	case wire.OpJoined:
		if !c.attached && !s.joined {
			s.joined = true
			if s.attachLn != nil {
				go s.acceptAttached(s.attachLn)
			}
		}
	default:
		s.reply(c, wire.Response{ID: req.ID, Kind: wire.KindError, Err: fmt.Sprintf("unknown operation %q", req.Op)})
	}
}

// reply answers a request of c from its request loop. The owner's
// requests are handled on the locked thread, which also forks attached
// connections' commands: their answers must not wait there for an owner
// that does not read its socket.
func (s *initServer) reply(c *initConn, r wire.Response) {
	if c.attached {
		c.fc.Send(r)
		return
	}
	go c.fc.Send(r)
}

// signal sends signal number sig (one of attachSignals) to the command's
// process group, or, on a terminal, to the terminal's foreground process
// group (the job a ^C would reach).
func (p *initProc) signal(sig int) {
	if !attachSignals[sig] {
		return
	}
	pgrp := p.pid
	if p.tty != nil {
		if rc, err := p.tty.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				if fg, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil && fg > 1 {
					pgrp = fg
				}
			})
		}
	}
	unix.Kill(-pgrp, unix.Signal(sig))
}

// attachSignals are the signals a host may send to a command: the job
// control and termination ones a terminal or a user sends.
var attachSignals = map[int]bool{int(unix.SIGHUP): true, int(unix.SIGINT): true, int(unix.SIGQUIT): true,
	int(unix.SIGKILL): true, int(unix.SIGUSR1): true, int(unix.SIGUSR2): true, int(unix.SIGTERM): true,
	int(unix.SIGCONT): true, int(unix.SIGTSTP): true, int(unix.SIGWINCH): true}

// resize sets the window size of the command's terminal (the kernel then
// sends SIGWINCH to its foreground process group).
func (p *initProc) resize(rows, cols uint16) {
	if p.tty == nil {
		return
	}
	if rc, err := p.tty.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
		})
	}
}

// reap waits for every child of PID 1: commands (whose status goes to
// their waiter) and orphans re-parented to the init (discarded).
func (s *initServer) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.ECHILD) {
			<-s.kick
			continue
		}
		if err != nil {
			continue
		}
		s.mu.Lock()
		p := s.procs[pid]
		delete(s.procs, pid)
		s.mu.Unlock()
		if p != nil {
			p.status <- ws
		}
	}
}

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
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.conn.fc.Send(wire.Response{ID: p.id, Kind: wire.KindOutput, Data: append([]byte(nil), buf[:n]...), Stream: stream})
		}
		if err != nil {
			return
		}
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

// fileOp serves ReadFile, WriteFile, Stat and ReadDir with the init's own
// (already restricted) rights.
func (s *initServer) fileOp(c *initConn, req wire.Request) {
	var resp wire.Response
	var err error
	switch req.Op {
	case wire.OpReadFile:
		resp.Data, err = os.ReadFile(req.Path)
	case wire.OpWriteFile:
		if c.attached {
			err = s.writeAttached(c, req)
		} else {
			err = writeFileAtomic(req.Path, req.Data, os.FileMode(req.Perm))
		}
	case wire.OpStat:
		var st os.FileInfo
		if st, err = os.Stat(req.Path); err == nil {
			w := toWireInfo(st)
			resp.Info = &w
		}
	case wire.OpChown:
		err = chownOp(c, req)
	case wire.OpReadDir:
		var entries []os.DirEntry
		entries, err = os.ReadDir(req.Path)
		for _, e := range entries {
			if st, ierr := e.Info(); ierr == nil {
				resp.Infos = append(resp.Infos, toWireInfo(st))
			}
		}
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	if err != nil {
		c.fc.Send(wire.ErrorResponse(req.ID, err))
		return
	}
	resp.ID, resp.Kind = req.ID, wire.KindOK
	c.fc.Send(resp)
}

func toWireInfo(st os.FileInfo) wire.FileInfo {
	return wire.FileInfo{Name: st.Name(), Size: st.Size(), Mode: uint32(st.Mode()), ModTime: st.ModTime(), IsDir: st.IsDir()}
}

// writeFileAtomic writes a temp file in the target directory, syncs it
// and renames it over path, creating parent directories.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// dial connects to 127.0.0.1:Port inside the box for a forwarded host
// port and hands the socket to the host.
func (s *initServer) dial(req wire.Request) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(req.Port)), 5*time.Second)
	if err != nil {
		s.main.fc.Send(wire.ErrorResponse(req.ID, err))
		return
	}
	if err := wire.SendConn(s.conns, &s.connsMu, req.ID, c); err != nil {
		s.main.fc.Send(wire.ErrorResponse(req.ID, err))
		return
	}
	s.main.fc.Send(wire.Response{ID: req.ID, Kind: wire.KindOK})
}

// listenEgress starts the in-box relay: every connection to
// 127.0.0.1:port (wire.InitSpec.EgressPort) is handed to the host's
// egress proxy.
func (s *initServer) listenEgress(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			if err := wire.SendConn(s.conns, &s.connsMu, 0, c); err != nil {
				io.WriteString(os.Stderr, "hermes box-init: egress relay: "+err.Error()+"\n")
			}
		}
	}()
	return nil
}
