package initproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// Passwordless sudo inside a box (E2B's templates give `user` one; issue
// 25). The design keeps the box's security where it was: a command run
// through sudo is exactly a command the host runs as the box's root (an
// E2B SDK call with user "root"), nothing more.
//
//   - The init listens on wire.SudoSocket, an abstract SOCK_SEQPACKET unix
//     socket of the box's own network namespace: no host process and no
//     other box can reach it, and no file of it lands in the box's layer.
//     It binds the name once it has restricted itself and before any
//     command runs, so no box process can take the name first; the client
//     also checks that the listener is PID 1 running as root.
//   - A connection is served only when its peer's uid (SO_PEERCRED, fixed
//     at connect(2)) is one of wire.InitSpec.SudoUIDs, one the owner
//     granted since (wire.OpGrantSudo: the image's User) or 0. Boxes use it
//     only with InitSpec.SwitchUsers, where a uid in the box is that uid on
//     the host; other users of an image get "not in the sudoers file".
//   - The request is one message of at most maxSudoRequest bytes (JSON
//     sudoRequest: argv, environment, working directory) carrying the
//     client's standard input, output and error (SCM_RIGHTS). The init
//     forks the command as it forks every command (start): on its locked
//     thread, whose capability bounding set is empty, in a new session,
//     with no credential change, so it runs as uid 0 of the box without
//     capabilities, under the box's Landlock ruleset, seccomp filter,
//     no_new_privs, namespaces and cgroup, with the client's descriptors
//     as its 0, 1 and 2 (so a pipe, a file or a terminal passes through).
//   - Then the client may send sudoSignal messages (the signals sudo(8)
//     relays, attachSignals); the init answers once, with the command's
//     exit (sudoReply), or an error. When the client goes away first (it
//     was killed, as E2B's commands.kill and timeouts do) the command's
//     tree is killed, so nothing escapes the caller's lifetime.
//
// The client is SudoMain, the hermes binary bound at wire.SudoPath.

// maxSudoRequest bounds a sudo request message (argv and environment).
const maxSudoRequest = 256 << 10

// maxSudoConns bounds the sudo connections served at once; more wait in
// the listen backlog.
const maxSudoConns = 64

// sudoHelloTimeout is how long a connection may take to send its request.
const sudoHelloTimeout = 5 * time.Second

// sudoRequest is what the client asks to run as root. Argv[0] is looked up
// in the PATH of Env when it has no slash.
type sudoRequest struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

// sudoReply is the init's one answer: the command's exit, or Err when it
// could not be started (then Code is 1, as sudo(8) exits).
type sudoReply struct {
	Code   int    `json:"code"`
	Signal int    `json:"signal,omitempty"` // the signal number that ended it
	Err    string `json:"err,omitempty"`
}

// sudoSignal asks the init to send Signal to the command's process group.
type sudoSignal struct {
	Signal int `json:"signal"`
}

// maySudo reports whether uid may use the box's sudo: root, one of
// spec.SudoUIDs, or one granted since (wire.OpGrantSudo).
func (s *initServer) maySudo(uid uint32) bool {
	if uid == 0 || slices.Contains(s.spec.SudoUIDs, uid) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.sudoGranted, uid)
}

// listenSudo binds wire.SudoSocket and serves it until the box ends.
func (s *initServer) listenSudo() error {
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: wire.SudoSocket, Net: "unixpacket"})
	if err != nil {
		return fmt.Errorf("sudo socket: %w", err)
	}
	go func() {
		slots := make(chan struct{}, maxSudoConns)
		for {
			slots <- struct{}{}
			c, err := ln.AcceptUnix()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				<-slots
				time.Sleep(10 * time.Millisecond) // EMFILE and the like: back off
				continue
			}
			go func() {
				defer func() { <-slots }()
				s.serveSudo(c)
			}()
		}
	}()
	return nil
}

// serveSudo runs one sudo request.
func (s *initServer) serveSudo(c *net.UnixConn) {
	defer c.Close()
	answer := func(r sudoReply) {
		b, _ := json.Marshal(r)
		c.Write(b)
	}
	uid, err := peerUID(c)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(sudoHelloTimeout))
	req, fds, err := readSudoRequest(c) // read first: the client's send then succeeds
	c.SetReadDeadline(time.Time{})
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if !s.maySudo(uid) {
		answer(sudoReply{Code: 1, Err: fmt.Sprintf("uid %d is not in the sudoers file", uid)})
		return
	}
	if err != nil {
		answer(sudoReply{Code: 1, Err: err.Error()})
		return
	}
	p, err := s.startSudo(req, fds)
	if err != nil {
		answer(sudoReply{Code: 1, Err: err.Error()})
		return
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	fds = nil
	gone := make(chan struct{})
	go s.relaySudoSignals(c, p, gone)
	select {
	case ws := <-p.status:
		r := sudoReply{Code: ws.ExitStatus()}
		if ws.Signaled() {
			r.Code, r.Signal = 128+int(ws.Signal()), int(ws.Signal())
		}
		answer(r)
	case <-gone:
		select {
		case <-p.status: // it ended as the caller did
		default:
			killTree(p.pid) // the caller ended: so does what it ran
		}
	}
}

// readSudoRequest reads the request message of c and the three
// descriptors it carries (closed by the caller, also on error).
func readSudoRequest(c *net.UnixConn) (sudoRequest, []int, error) {
	var req sudoRequest
	buf := make([]byte, maxSudoRequest+1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return req, nil, fmt.Errorf("read the request: %w", err)
	}
	var fds []int
	if cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range cmsgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	switch {
	case n > maxSudoRequest || flags&unix.MSG_TRUNC != 0:
		return req, fds, fmt.Errorf("request longer than %d bytes (argument list too long)", maxSudoRequest)
	case flags&unix.MSG_CTRUNC != 0 || len(fds) != 3:
		return req, fds, errors.New("the request must carry standard input, output and error")
	}
	if err := json.Unmarshal(buf[:n], &req); err != nil {
		return req, fds, fmt.Errorf("request: %w", err)
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return req, fds, errors.New("no command")
	}
	return req, fds, nil
}

// startSudo forks req as the box's root with fds as its standard
// descriptors, as start forks a command without RunAs.
func (s *initServer) startSudo(req sudoRequest, fds []int) (*initProc, error) {
	argv0, err := lookPathIn(req.Argv[0], req.Env)
	if err != nil {
		return nil, fmt.Errorf("%s: command not found", req.Argv[0])
	}
	if req.Dir == "" {
		req.Dir = "/"
	}
	attr := &syscall.ProcAttr{Dir: req.Dir, Env: req.Env, Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		Sys: &syscall.SysProcAttr{Setsid: true}}
	p := &initProc{status: make(chan unix.WaitStatus, 1)}
	s.onLockedThread(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		p.pid, err = syscall.ForkExec(argv0, req.Argv, attr)
		if err == nil {
			s.procs[p.pid] = p
		}
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("unable to run %s in %s: %w", req.Argv[0], req.Dir, err)
		}
		return nil, fmt.Errorf("%s: %w", req.Argv[0], err)
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return p, nil
}

// relaySudoSignals sends the signals the client relays to the command's
// process group, and closes gone once the client hung up.
func (s *initServer) relaySudoSignals(c *net.UnixConn, p *initProc, gone chan<- struct{}) {
	defer close(gone)
	buf := make([]byte, 256)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return
		}
		var sig sudoSignal
		if json.Unmarshal(buf[:n], &sig) == nil && attachSignals[sig.Signal] {
			unix.Kill(-p.pid, unix.Signal(sig.Signal))
		}
	}
}
