package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
)

// A running box is attachable: its init listens on
// HERMES_HOME/boxes/TASK/attach-v2.sock (initproc/attach_linux.go), so that another
// hermes process of the same user (hermes box exec, box shell, box port,
// an agent session with the same task) runs its commands in that box
// instead of starting it again. An attached *Box works like the owner's:
// commands, files and port forwarding, with the owner's limits,
// workspace and environment (the attaching process's terminal section is
// not applied); a process whose own workspace is another directory is
// refused (Box.CheckWorkspace, Manager.Box). Closing an attached Box only
// disconnects; commands it started are killed by the init then. The init
// closes an attached connection idle for a minute (Manager.Box attaches
// again). Commands of attached processes count as use of the box for its
// owner's idle timer; an owner that calls Box.WaitAttached before
// stopping the box (hermes box exec does) lets them end first. Otherwise,
// when the owner stops the box (or exits), the box and every command in
// it end, attached ones included: they see ErrBoxStopped, and the next
// Manager.Box call starts the box afresh.

// ErrNotRunning is returned by Attach when no process runs the box (no
// attach socket, or a stale one, which Attach removes), or the process
// that runs it is stopping it (Box.WaitAttached).
var ErrNotRunning = errors.New("box not running")

// ResolveWorkspace is the workspace of a box started with terminal.cwd
// cwd ("" or "." = the current directory): absolute, symlinks resolved.
func ResolveWorkspace(cwd string) string {
	if cwd == "" || cwd == "." {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	return cwd
}

// CheckWorkspace refuses to use the attached box b for a caller whose own
// workspace, ws (ResolveWorkspace), is another directory: its commands
// would run, and write, in the box's workspace instead. The error names
// both and the fix.
func (b *Box) CheckWorkspace(ws string) error {
	if !b.Attached() || ws == b.workdir {
		return nil
	}
	return fmt.Errorf("box %s runs (in another hermes process) with workspace %s, but this command's workspace is %s (the current directory, or terminal.cwd): run it from %s, or use another task id for %s",
		b.task, b.workdir, ws, b.workdir, ws)
}

// errProtocol is a box started by a hermes of another attach protocol.
var errProtocol = errors.New("the box was started by another version of hermes")

// AttachSocketPath is where the init of the box of task listens for
// attaching processes.
func AttachSocketPath(home, task string) string {
	return filepath.Join(home, "boxes", task, wire.AttachSocketName)
}

// Attach connects to the running box of task of HERMES_HOME home. The
// error wraps ErrNotRunning when no process runs it.
func Attach(ctx context.Context, home, task string) (*Box, error) {
	if err := checkTaskID(task); err != nil {
		return nil, err
	}
	path := AttachSocketPath(home, task)
	c, err := dialAttachSocket(path)
	if err != nil {
		if errors.Is(err, ErrNotRunning) && legacyInitListens(filepath.Join(filepath.Dir(path), wire.LegacyAttachSocketName)) {
			return nil, fmt.Errorf("box %s: %w: its init speaks attach protocol 1 or older, this hermes %d; run the command with the hermes binary that started the box, or stop that box first",
				task, errProtocol, wire.Version)
		}
		return nil, err
	}
	fc := wire.NewConn(c)
	deadline := time.Now().Add(wire.AttachHelloTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	// The answer is read even when the hello cannot be sent: an init that
	// refuses a peer answers and hangs up without reading.
	var r wire.Response
	sendErr := fc.Send(wire.Request{Op: wire.OpAttach, Version: wire.Version})
	err = fc.Receive(&r)
	switch {
	case err == nil && r.Kind == wire.KindError && r.ErrKind == wire.ErrKindDraining:
		c.Close()
		return nil, fmt.Errorf("box %s: %w (%s)", task, ErrNotRunning, r.Err)
	case err == nil && r.Kind == wire.KindError:
		err = errors.New(r.Err)
	case err == nil && (r.Kind != wire.KindReady || r.Attach == nil):
		err = fmt.Errorf("unexpected answer %q", r.Kind)
	case err == nil && r.Attach.Protocol != wire.Version:
		err = fmt.Errorf("%w: it speaks attach protocol %d, this hermes %d; run the command with the hermes binary that started the box, or stop that box first",
			errProtocol, r.Attach.Protocol, wire.Version)
	case err != nil && hungUp(err):
		// Accepted, then closed before the answer: the init ended (its
		// owner stopped the box). Nothing was started.
		c.Close()
		return nil, fmt.Errorf("box %s: %w (its init at %s hung up: %v)", task, ErrNotRunning, path, err)
	case err != nil && sendErr != nil:
		err = sendErr
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("box %s: attach to its running init (%s): %w", task, path, err)
	}
	c.SetDeadline(time.Time{})
	info := r.Attach
	bctx, cancel := context.WithCancel(context.Background())
	b := &Box{
		task: task, stateDir: filepath.Dir(path), workdir: info.Workdir, shell: r.Shell, env: info.Env,
		attachPath: path, fc: fc, ctx: bctx, cancel: cancel, died: make(chan struct{}), initDone: make(chan struct{}),
		handlers: map[uint64]func(wire.Response){}, dials: map[uint64]chan net.Conn{}, now: time.Now, lastUsed: time.Now(),
		bindWorkspace: info.BindWorkspace,
	}
	if b.shell == "" {
		b.shell = "/bin/sh"
	}
	if info.Cgroup != "" {
		if cg, err := cgroup.Open(info.Cgroup); err == nil {
			b.cg = cg
			b.oomKnown.Store(cg.OOMKills())
		}
	}
	go b.run()
	return b, nil
}

// hungUp reports whether err ends a connection its peer closed (or
// reset) rather than one that timed out.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)
}

// dialAttachSocket connects to the attach socket at path. A missing socket,
// or one nobody listens on, is ErrNotRunning; a stale socket is removed
// when no process holds the box's state lock.
func dialAttachSocket(path string) (*net.UnixConn, error) {
	addr, done, err := initproc.ShortSocketPath(path, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (%v)", ErrNotRunning, err)
		}
		return nil, err
	}
	defer done()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: addr, Net: "unix"})
	if err == nil {
		return c, nil
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("%w (no %s)", ErrNotRunning, path)
	case errors.Is(err, unix.ECONNREFUSED):
		removeStaleSocket(path)
		return nil, fmt.Errorf("%w (stale %s)", ErrNotRunning, path)
	}
	return nil, fmt.Errorf("attach socket %s: %w", path, err)
}

// legacyInitListens reports whether an init of protocol version 1 or
// older (wire.LegacyAttachSocketName) accepts connections at path: the box
// runs, started by an older hermes. The connection is closed unused (such
// an init ends it when no hello comes).
func legacyInitListens(path string) bool {
	if _, err := os.Lstat(path); err != nil {
		return false
	}
	c, err := dialAttachSocket(path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// removeStaleSocket removes the attach socket at path if no process holds
// the state lock of its box (whose init would be binding a new one).
func removeStaleSocket(path string) {
	lock, err := lockState(filepath.Dir(path))
	if err != nil {
		return
	}
	defer lock.Close()
	os.Remove(path)
}

// dialAttached opens a connection to 127.0.0.1:port or a unix socket inside an attached
// box: a connection of its own to the attach socket, whose one answer
// carries the socket the init connected (or the error text).
func (b *Box) dialAttached(ctx context.Context, req wire.Request, target string) (net.Conn, error) {
	c, err := dialAttachSocket(b.attachPath)
	if err != nil {
		return nil, fmt.Errorf("box %s: %w", b.task, err)
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	} else {
		c.SetDeadline(time.Now().Add(30 * time.Second))
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err := wire.NewConn(c).Send(req); err != nil {
		return nil, fmt.Errorf("box %s: dial %s: %w", b.task, target, err)
	}
	msg := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(msg, oob)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("box %s: dial %s: %w", b.task, target, err)
	}
	if oobn == 0 {
		return nil, fmt.Errorf("box %s: dial %s: %s", b.task, target, msg[:n])
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("box %s: dial %s: bad answer", b.task, target)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("box %s: dial %s: bad answer", b.task, target)
	}
	f := os.NewFile(uintptr(fds[0]), "box-conn")
	defer f.Close()
	return net.FileConn(f)
}

// Attached reports whether b is a box another process runs, reached
// through its attach socket.
func (b *Box) Attached() bool { return b.attachPath != "" }

// noteAttached records a wire.KindAttached report: n attached commands run,
// and the box was used now.
func (b *Box) noteAttached(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastUsed = b.now()
	if n != b.attachedRunning {
		b.attachedRunning = n
		if b.attachedChanged != nil {
			close(b.attachedChanged)
			b.attachedChanged = nil
		}
	}
}

// WaitAttached prepares the owner's box for stopping: from now on the init
// accepts no attached connection or command, and WaitAttached waits until
// the commands attached processes run have ended, ctx ends or the box
// dies. waiting is called once, with their number, when there are any.
// On an attached Box it returns at once.
func (b *Box) WaitAttached(ctx context.Context, waiting func(n int)) error {
	if b.Attached() {
		return nil
	}
	r, err := b.roundTrip(ctx, wire.Request{Op: wire.OpDrain})
	if err != nil {
		return err
	}
	if r.Kind == wire.KindError {
		return fmt.Errorf("box %s: %s", b.task, r.Err)
	}
	told := false
	for {
		b.mu.Lock()
		n := b.attachedRunning
		if b.attachedChanged == nil {
			b.attachedChanged = make(chan struct{})
		}
		ch := b.attachedChanged
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		if !told && waiting != nil {
			waiting(n)
			told = true
		}
		select {
		case <-ch:
		case <-b.died:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// responseError turns an error frame back into a Go error wrapping the
// matching fs sentinel, as a *fs.PathError for op on path.
func responseError(r wire.Response, op, path string) error {
	var base error
	switch r.ErrKind {
	case wire.ErrKindNotExist:
		base = fs.ErrNotExist
	case wire.ErrKindPermission:
		base = fs.ErrPermission
	case wire.ErrKindExist:
		base = fs.ErrExist
	case wire.ErrKindDraining:
		// Refused before it started: the caller may start the box afresh
		// and run it there.
		return fmt.Errorf("box %s %s: %w: %s", op, path, ErrNotRunning, r.Err)
	default:
		return fmt.Errorf("box %s %s: %s", op, path, r.Err)
	}
	return &fs.PathError{Op: op, Path: path, Err: initError{msg: r.Err, kind: base}}
}

// initError is an error the init reported: its text as the init wrote it
// (which already says what is wrong: "executable file not found in
// $PATH"), matching its kind (fs.ErrNotExist...) with errors.Is.
type initError struct {
	msg  string
	kind error
}

func (e initError) Error() string { return e.msg }
func (e initError) Unwrap() error { return e.kind }
