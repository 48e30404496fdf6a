package initproc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// outputChunk is the largest output frame sent to the host.
const outputChunk = 32 << 10

// drainGrace is how long the init keeps reading a command's output after
// the command exited, for background children still holding the pipe.
const drainGrace = 150 * time.Millisecond

// maxFileOps is how many file operations the init runs at once; more
// wait their turn on a goroutine, which holds no thread. It is a quarter
// of initSpareThreads: an attacker in the box who fills its pids limit and
// gets the host to read many files at once (attacker trial, 2026-12-06:
// 12 reads of FIFOs, or 40 of one 20 MB file) no longer makes the Go
// runtime need a thread it cannot create. With half of them,
// TestEscapeForkBomb lost the init once in CI and once in 6 runs beside
// three busy loops; with a quarter, in none of 14.
const maxFileOps = initSpareThreads / 4

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
	// fileSlots bounds the file operations under way at once (fileOp):
	// each holds an OS thread while it is in a system call, and under a
	// fork bomb the init has only its spare threads (initSpareThreads).
	// nil = no bound.
	fileSlots chan struct{}

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
	// sudoGranted are the uids wire.OpGrantSudo added to spec.SudoUIDs
	// (guarded by mu).
	sudoGranted []uint32
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
		attached: map[*initConn]bool{}, reportKick: make(chan struct{}, 1), fileSlots: make(chan struct{}, maxFileOps)}
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
	case wire.OpGrantSudo:
		if c.attached || req.Owner == nil {
			s.reply(c, wire.Response{ID: req.ID, Kind: wire.KindError, Err: "grantsudo needs the box's owner and a uid"})
			return
		}
		s.mu.Lock()
		s.sudoGranted = append(s.sudoGranted, req.Owner.UID)
		s.mu.Unlock()
		s.reply(c, wire.Response{ID: req.ID, Kind: wire.KindOK})
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

// dialInBox connects to the unix socket at req.Path inside the box
// when it is set, else to 127.0.0.1:req.Port.
func dialInBox(req wire.Request) (net.Conn, error) {
	if req.Path != "" {
		return net.DialTimeout("unix", req.Path, 5*time.Second)
	}
	return net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(req.Port)), 5*time.Second)
}

// dial connects to 127.0.0.1:Port (or the unix socket at Path) inside
// the box for the host and hands the socket to the host.
func (s *initServer) dial(req wire.Request) {
	c, err := dialInBox(req)
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
