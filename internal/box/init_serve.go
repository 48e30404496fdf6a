package box

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/egress"
)

// outputChunk is the largest output frame sent to the host.
const outputChunk = 32 << 10

// drainGrace is how long the init keeps reading a command's output after
// the command exited, for background children still holding the pipe.
const drainGrace = 150 * time.Millisecond

// initServer is the request loop of a box's PID 1.
type initServer struct {
	fc      *frameConn
	conns   *net.UnixConn
	connsMu sync.Mutex
	spec    *initSpec

	devNull int       // /dev/null of the box, the stdin of commands without one
	buffers sync.Pool // *[]byte of outputChunk, for reading command output

	mu    sync.Mutex
	procs map[int]*initProc    // by pid
	byID  map[uint64]*initProc // by request id
	kick  chan struct{}
}

// initProc is one running command.
type initProc struct {
	id       uint64
	pid      int
	stdin    *os.File
	stdinQ   chan []byte // nil entry = close stdin
	status   chan unix.WaitStatus
	timedOut bool
}

// newInitServer returns the server of a box whose root is built (its
// /dev/null is opened once here, for every command's stdin).
func newInitServer(fc *frameConn, conns *net.UnixConn, spec *initSpec) (*initServer, error) {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/null: %w", err)
	}
	s := &initServer{fc: fc, conns: conns, spec: spec, devNull: null, procs: map[int]*initProc{},
		byID: map[uint64]*initProc{}, kick: make(chan struct{}, 1)}
	s.buffers.New = func() any { b := make([]byte, outputChunk); return &b }
	return s, nil
}

// serve handles requests until the control socket closes, then kills
// every process of the box (returning from PID 1 ends the namespace).
func (s *initServer) serve() {
	go s.reap()
	for {
		var req request
		if err := s.fc.dec.Decode(&req); err != nil {
			unix.Kill(-1, unix.SIGKILL)
			return
		}
		s.handle(req)
	}
}

func (s *initServer) handle(req request) {
	switch req.Op {
	case opExec:
		if req.Exec == nil {
			s.fc.send(response{ID: req.ID, Kind: kindError, Err: "exec without a command"})
			return
		}
		if err := s.start(req.ID, req.Exec); err != nil {
			s.fc.send(errorResponse(req.ID, err))
		}
	case opStdin, opCloseStdin:
		s.mu.Lock()
		p := s.byID[req.ID]
		s.mu.Unlock()
		if p != nil && p.stdinQ != nil {
			data := req.Data
			if req.Op == opCloseStdin {
				data = nil
			} else if data == nil {
				data = []byte{}
			}
			select {
			case p.stdinQ <- data:
			default: // queue full: the command is not reading; drop rather than stall the box
			}
		}
	case opKill:
		s.mu.Lock()
		p := s.byID[req.ID]
		s.mu.Unlock()
		if p != nil {
			killTree(p.pid)
		}
	case opTerm:
		s.mu.Lock()
		p := s.byID[req.ID]
		s.mu.Unlock()
		if p != nil {
			termChildren(p.pid)
		}
	case opDial:
		go s.dial(req)
	default:
		go s.fileOp(req)
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

// start runs one command: a new session (and process group), output on one
// pipe for stdout and stderr, the box environment. It forks with
// syscall.ForkExec (clone(CLONE_VFORK|CLONE_VM), as os/exec does) and no
// os.Process or pidfd: the reaper owns the child's exit status.
func (s *initServer) start(id uint64, e *execSpec) error {
	if len(e.Argv) == 0 {
		return errors.New("empty command")
	}
	var pipes [2]int
	if err := unix.Pipe2(pipes[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	// The read end is non-blocking so that os.File polls it and finish can
	// cut a drain short with a deadline; the command's end stays blocking.
	if err := unix.SetNonblock(pipes[0], true); err != nil {
		unix.Close(pipes[0])
		unix.Close(pipes[1])
		return err
	}
	outR := os.NewFile(uintptr(pipes[0]), "box-command-output")
	defer unix.Close(pipes[1])
	stdinFD := s.devNull
	var stdinW *os.File
	if e.Stdin {
		var in [2]int
		if err := unix.Pipe2(in[:], unix.O_CLOEXEC); err != nil {
			outR.Close()
			return err
		}
		defer unix.Close(in[0])
		stdinFD, stdinW = in[0], os.NewFile(uintptr(in[1]), "box-command-stdin")
	}
	attr := &syscall.ProcAttr{Dir: e.Dir, Env: e.Env, Files: []uintptr{uintptr(stdinFD), uintptr(pipes[1]), uintptr(pipes[1])},
		Sys: &syscall.SysProcAttr{Setsid: true}}
	p := &initProc{id: id, stdin: stdinW, status: make(chan unix.WaitStatus, 1)}
	s.mu.Lock()
	pid, err := syscall.ForkExec(e.Argv[0], e.Argv, attr)
	if err != nil {
		s.mu.Unlock()
		outR.Close()
		if stdinW != nil {
			stdinW.Close()
		}
		return &os.PathError{Op: "fork/exec", Path: e.Argv[0], Err: err}
	}
	p.pid = pid
	s.procs[p.pid] = p
	s.byID[id] = p
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if stdinW != nil {
		p.stdinQ = make(chan []byte, 256)
		go feedStdin(stdinW, p.stdinQ)
	}
	s.fc.send(response{ID: id, Kind: kindStarted, PID: p.pid})
	var timer *time.Timer
	if e.Timeout > 0 {
		timer = time.AfterFunc(e.Timeout, func() {
			s.mu.Lock()
			p.timedOut = true
			s.mu.Unlock()
			killTree(p.pid)
		})
	}
	go s.finish(p, outR, timer)
	return nil
}

func feedStdin(w *os.File, q chan []byte) {
	defer w.Close()
	for data := range q {
		if data == nil {
			return
		}
		if _, err := w.Write(data); err != nil {
			return
		}
	}
}

// finish streams the command's output, waits for its exit and reports it.
func (s *initServer) finish(p *initProc, out *os.File, timer *time.Timer) {
	defer out.Close()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		bp := s.buffers.Get().(*[]byte)
		defer s.buffers.Put(bp)
		buf := *bp
		for {
			n, err := out.Read(buf)
			if n > 0 {
				s.fc.send(response{ID: p.id, Kind: kindOutput, Data: append([]byte(nil), buf[:n]...)})
			}
			if err != nil {
				return
			}
		}
	}()
	ws := <-p.status
	if timer != nil {
		timer.Stop()
	}
	select {
	case <-readDone:
	default:
		grace := time.NewTimer(drainGrace)
		select {
		case <-readDone:
		case <-grace.C:
			out.SetReadDeadline(time.Now())
			<-readDone
		}
		grace.Stop()
	}
	s.mu.Lock()
	delete(s.byID, p.id)
	timedOut := p.timedOut
	s.mu.Unlock()
	if p.stdinQ != nil {
		select {
		case p.stdinQ <- nil:
		default:
		}
	}
	ex := exitInfo{Code: ws.ExitStatus(), TimedOut: timedOut}
	if ws.Signaled() {
		ex.Code = -1
		ex.Signal = unix.SignalName(ws.Signal())
	}
	s.fc.send(response{ID: p.id, Kind: kindExit, Exit: ex})
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
func (s *initServer) fileOp(req request) {
	var resp response
	var err error
	switch req.Op {
	case opReadFile:
		resp.Data, err = os.ReadFile(req.Path)
	case opWriteFile:
		err = writeFileAtomic(req.Path, req.Data, os.FileMode(req.Perm))
	case opStat:
		var st os.FileInfo
		if st, err = os.Stat(req.Path); err == nil {
			w := toWireInfo(st)
			resp.Info = &w
		}
	case opReadDir:
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
		s.fc.send(errorResponse(req.ID, err))
		return
	}
	resp.ID, resp.Kind = req.ID, kindOK
	s.fc.send(resp)
}

func toWireInfo(st os.FileInfo) wireFileInfo {
	return wireFileInfo{Name: st.Name(), Size: st.Size(), Mode: uint32(st.Mode()), ModTime: st.ModTime(), IsDir: st.IsDir()}
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
func (s *initServer) dial(req request) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(req.Port)), 5*time.Second)
	if err != nil {
		s.fc.send(errorResponse(req.ID, err))
		return
	}
	if err := sendConnFD(s.conns, &s.connsMu, req.ID, c); err != nil {
		s.fc.send(errorResponse(req.ID, err))
		return
	}
	s.fc.send(response{ID: req.ID, Kind: kindOK})
}

// listenEgress starts the in-box relay: every connection to
// 127.0.0.1:egress.ProxyPort is handed to the host's egress proxy.
func (s *initServer) listenEgress() error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(egress.ProxyPort)))
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
			if err := sendConnFD(s.conns, &s.connsMu, 0, c); err != nil {
				io.WriteString(os.Stderr, "hermes box-init: egress relay: "+err.Error()+"\n")
			}
		}
	}()
	return nil
}
