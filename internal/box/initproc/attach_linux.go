package initproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// The init side of the attach socket (attach.go has the client side).
//
// The init binds HERMES_HOME/boxes/TASK/attach-v2.sock (wire.AttachSocketName) before it pivots into
// the box (the state directory is hidden inside the box, so no box process
// can reach the socket), with mode 0600 in a 0700 directory. It accepts a
// connection only from a peer whose uid (SO_PEERCRED, as seen from the
// init's user namespace) is the init's own, the box owner's. The first
// frame of a connection is wire.OpAttach (answered by wire.KindReady with
// wire.AttachInfo, then the connection carries the same request and response
// frames as the owner's control socket, minus setup and dial) or wire.OpDial
// (answered by one message carrying the connected socket, see dialAttached).
// Frames are at most wire.MaxAttachFrame bytes (a WriteFile's data comes in
// parts of wire.AttachWriteChunk); the first must come within
// wire.AttachHelloTimeout, and a connection with no command running is closed
// after wire.AttachIdleTimeout without a frame (the client attaches again when
// it needs the box). At most wire.MaxAttached connections are open at once;
// one more is answered with an error saying so. Commands started over a
// connection are killed when it closes (the attaching process ended). Commands run exactly as the
// owner's do: forked by the init, in the box's namespaces and cgroup,
// under its Landlock, seccomp and capability restrictions.

// maxUploads bounds the WriteFiles in parts one attached connection has
// under way.
const maxUploads = 16

// unixPathMax is the longest socket path bind(2) and connect(2) take
// (sun_path is 108 bytes, NUL included).
const unixPathMax = 107

// ShortSocketPath returns a path to path usable in a sockaddr_un: path
// itself, or /proc/self/fd/N/NAME through an O_PATH descriptor of its
// directory (closed by the returned func) when path is too long or
// viaDir is set.
func ShortSocketPath(path string, viaDir bool) (string, func(), error) {
	if len(path) <= unixPathMax && !viaDir {
		return path, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	short := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + filepath.Base(path)
	if len(short) > unixPathMax {
		unix.Close(fd)
		return "", nil, fmt.Errorf("socket name %q is too long", filepath.Base(path))
	}
	return short, func() { unix.Close(fd) }, nil
}

// listenAttach binds the attach socket at path with mode 0600 (a stale
// socket there is replaced: the host holds the box's state lock). The
// name bound is /proc/self/fd/N/attach-v2.sock, never path: the socket is
// listed in the box's network namespace (/proc/net/unix, with the name it
// was bound to), which must not learn where HERMES_HOME is.
func listenAttach(path string) (*net.UnixListener, error) {
	addr, done, err := ShortSocketPath(path, true)
	if err != nil {
		return nil, err
	}
	defer done()
	os.Remove(path)
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("attach socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // the host removes it once the init is gone
	return ln, nil
}

// acceptAttached serves attached connections until ln fails for good.
func (s *initServer) acceptAttached(ln *net.UnixListener) {
	slots := make(chan struct{}, wire.MaxAttached)
	refusals := make(chan struct{}, 8)
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: back off
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			select {
			case refusals <- struct{}{}:
				go func() {
					defer func() { <-refusals }()
					s.refuseFull(c)
				}()
			default:
				c.Close() // refusing too many already
			}
			continue
		}
		go func() {
			defer func() { <-slots }()
			s.serveAttached(c)
		}()
	}
}

// refuseFull answers a connection beyond wire.MaxAttached with an error, in
// the form its first frame expects, and closes it.
func (s *initServer) refuseFull(c *net.UnixConn) {
	defer c.Close()
	msg := fmt.Sprintf("box %s has %d attached connections (other hermes processes using it), the most it takes: try again when one has ended", s.spec.Task, wire.MaxAttached)
	c.SetDeadline(time.Now().Add(time.Second))
	fc := wire.NewLimitedConn(c, wire.MaxAttachFrame)
	var hello wire.Request
	if err := fc.Receive(&hello); err != nil {
		return
	}
	if hello.Op == wire.OpDial {
		c.Write([]byte(msg))
		return
	}
	fc.Send(wire.Response{ID: hello.ID, Kind: wire.KindError, Err: msg})
}

// peerUID returns the uid of the process at the other end of c, as seen
// from this process's user namespace.
func peerUID(c *net.UnixConn) (uint32, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}

// serveAttached runs one attached connection.
func (s *initServer) serveAttached(c *net.UnixConn) {
	defer c.Close()
	uid, err := peerUID(c)
	if err != nil {
		return
	}
	fc := wire.NewLimitedConn(c, wire.MaxAttachFrame)
	if uid != uint32(os.Geteuid()) {
		fc.Send(wire.Response{Kind: wire.KindError, Err: fmt.Sprintf("uid %d is not the box owner's", uid)})
		return
	}
	c.SetReadDeadline(time.Now().Add(wire.AttachHelloTimeout))
	var hello wire.Request
	if err := fc.Receive(&hello); err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	switch hello.Op {
	case wire.OpDial:
		s.dialAttached(c, hello)
		return
	case wire.OpAttach:
		if hello.Version != wire.Version {
			fc.Send(wire.Response{ID: hello.ID, Kind: wire.KindError, Err: fmt.Sprintf(
				"the box was started by another version of hermes: it speaks attach protocol %d, this hermes %d; run the command with the hermes binary that started the box, or stop that box first",
				wire.Version, hello.Version)})
			return
		}
	default:
		fc.Send(wire.Response{ID: hello.ID, Kind: wire.KindError, Err: fmt.Sprintf("first frame %q: want attach or dial", hello.Op)})
		return
	}
	conn := &initConn{fc: fc, attached: true, nc: c, byID: map[uint64]*initProc{}}
	s.mu.Lock()
	draining := s.draining
	if !draining {
		s.attached[conn] = true
	}
	s.mu.Unlock()
	if draining {
		fc.Send(wire.Response{ID: hello.ID, Kind: wire.KindError, Err: wire.ErrDraining.Error(), ErrKind: wire.ErrKindDraining})
		return
	}
	info := &wire.AttachInfo{Task: s.spec.Task, Env: s.spec.Env, Workdir: s.spec.Workspace, Cgroup: s.spec.Cgroup, Protocol: wire.Version,
		BindWorkspace: !s.spec.WorkspaceOverlay}
	if err := fc.Send(wire.Response{ID: hello.ID, Kind: wire.KindReady, PID: 1, Shell: s.shell(), Attach: info}); err != nil {
		return
	}
	defer s.dropConn(conn)
	for {
		s.armIdle(conn)
		var req wire.Request
		if err := fc.Receive(&req); err != nil {
			return
		}
		if err := checkAttachedRequest(req); err != nil {
			fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: err.Error()})
			continue
		}
		s.handle(conn, req)
	}
}

// armIdle sets the read deadline of attached connection c: none while
// one of its commands runs, else wire.AttachIdleTimeout from now.
func (s *initServer) armIdle(c *initConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idle := s.spec.AttachIdle
	if idle <= 0 {
		idle = wire.AttachIdleTimeout
	}
	if len(c.byID) > 0 {
		c.nc.SetReadDeadline(time.Time{})
	} else {
		c.nc.SetReadDeadline(time.Now().Add(idle))
	}
}

// writeAttached serves an attached connection's WriteFile, whose data
// comes in parts: each at its Offset, More on all but the last. The parts
// go to a temp file beside req.Path, renamed over it after the last
// (writeFileAtomic for data in one part). An Offset of 0 starts afresh.
func (s *initServer) writeAttached(c *initConn, req wire.Request) error {
	up := c.uploads[req.Path]
	if up != nil && req.Offset == 0 {
		up.abort()
		delete(c.uploads, req.Path)
		up = nil
	}
	if up == nil && !req.More && req.Offset == 0 {
		return writeFileAtomic(req.Path, req.Data, os.FileMode(req.Perm))
	}
	if up == nil {
		if req.Offset != 0 {
			return fmt.Errorf("write %s: part at offset %d of a write not under way", req.Path, req.Offset)
		}
		if len(c.uploads) >= maxUploads {
			return fmt.Errorf("write %s: %d writes in parts under way already", req.Path, maxUploads)
		}
		if err := os.MkdirAll(filepath.Dir(req.Path), 0o755); err != nil {
			return err
		}
		f, err := os.CreateTemp(filepath.Dir(req.Path), "."+filepath.Base(req.Path)+".tmp*")
		if err != nil {
			return err
		}
		up = &upload{f: f}
		if c.uploads == nil {
			c.uploads = map[string]*upload{}
		}
		c.uploads[req.Path] = up
	}
	err := up.write(req.Offset, req.Data)
	if err == nil && !req.More {
		delete(c.uploads, req.Path)
		return up.commit(req.Path, os.FileMode(req.Perm))
	}
	if err != nil {
		up.abort()
		delete(c.uploads, req.Path)
	}
	return err
}

// upload is a WriteFile in parts under way (writeAttached).
type upload struct {
	f *os.File
	n int64 // bytes written
}

func (u *upload) write(off int64, data []byte) error {
	if off != u.n {
		return fmt.Errorf("write %s: part at offset %d, want %d", u.f.Name(), off, u.n)
	}
	n, err := u.f.Write(data)
	u.n += int64(n)
	return err
}

func (u *upload) abort() {
	u.f.Close()
	os.Remove(u.f.Name())
}

func (u *upload) commit(path string, perm os.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	err := u.f.Sync()
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(u.f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(u.f.Name(), path)
	}
	if err != nil {
		os.Remove(u.f.Name())
	}
	return err
}

// noteUse records that an attached connection used the box or that the
// count of its commands changed: the reporter tells the owner. It never
// waits: an owner that does not read its socket (its output blocked)
// must not hold up attached connections.
func (s *initServer) noteUse() {
	select {
	case s.reportKick <- struct{}{}:
	default: // a report is due already; it will carry the current count
	}
}

// reporter sends a report (reportAttached) after each noteUse, coalescing
// the ones that come while a report waits for the owner's socket.
func (s *initServer) reporter() {
	for range s.reportKick {
		s.reportAttached()
	}
}

// reportAttached tells the owner how many commands attached connections
// run (wire.KindAttached). Reports are sent in the order their counts are
// taken, so the last one the owner sees is current. It waits for the
// owner's socket: only the reporter and drain call it.
func (s *initServer) reportAttached() {
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	s.mu.Lock()
	n := 0
	for c := range s.attached {
		n += len(c.byID)
	}
	s.mu.Unlock()
	s.main.fc.Send(wire.Response{Kind: wire.KindAttached, PID: n})
}

// drain serves the owner's wire.OpDrain: from now on no attached connection
// or command is accepted; the count of attached commands still running
// is reported, then the request answered.
func (s *initServer) drain(id uint64) {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.reportAttached()
	s.main.fc.Send(wire.Response{ID: id, Kind: wire.KindOK})
}

// dropConn kills what an attached connection started that still runs:
// its process ended or hung up.
func (s *initServer) dropConn(c *initConn) {
	for _, up := range c.uploads {
		up.abort()
	}
	s.mu.Lock()
	delete(s.attached, c)
	var pids []int
	for _, p := range c.byID {
		pids = append(pids, p.pid)
	}
	s.mu.Unlock()
	for _, pid := range pids {
		killTree(pid)
	}
}

// shell is the box's shell, as reported at setup.
func (s *initServer) shell() string {
	if st, err := os.Stat("/bin/bash"); err == nil && !st.IsDir() {
		return "/bin/bash"
	}
	return "/bin/sh"
}

// checkAttachedRequest refuses what an attached connection may not send:
// setup, a second attach, dial (a connection of its own), unknown
// operations and malformed commands.
func checkAttachedRequest(req wire.Request) error {
	switch req.Op {
	case wire.OpExec:
		if req.Exec == nil || len(req.Exec.Argv) == 0 || req.Exec.Argv[0] == "" {
			return errors.New("exec without a command")
		}
		if req.Exec.Timeout < 0 {
			return errors.New("negative timeout")
		}
	case wire.OpStdin, wire.OpCloseStdin, wire.OpKill, wire.OpTerm, wire.OpSignal, wire.OpResize, wire.OpReadFile, wire.OpWriteFile, wire.OpStat, wire.OpReadDir:
	default:
		return fmt.Errorf("operation %q is not allowed on an attached connection", req.Op)
	}
	if req.Setup != nil {
		return errors.New("setup on an attached connection")
	}
	return nil
}

// dialAttached connects to 127.0.0.1:port inside the box and passes the
// socket back on c with SCM_RIGHTS (payload "ok"), or sends the error
// text without a descriptor.
func (s *initServer) dialAttached(c *net.UnixConn, req wire.Request) {
	if req.Path == "" && (req.Port < 1 || req.Port > 65535) {
		c.Write([]byte("port " + strconv.Itoa(req.Port) + " out of range 1-65535"))
		return
	}
	tc, err := dialInBox(req)
	if err != nil {
		c.Write([]byte(err.Error()))
		return
	}
	defer tc.Close()
	f, err := tc.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		c.Write([]byte(err.Error()))
		return
	}
	defer f.Close()
	c.WriteMsgUnix([]byte("ok"), unix.UnixRights(int(f.Fd())), nil)
}
