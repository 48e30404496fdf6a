package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/protect"
)

// maxCapturedOutput caps ExecResult.Output (the Output writer still sees
// everything).
const maxCapturedOutput = 16 << 20

// startTimeout bounds how long a box may take to build its root.
const startTimeout = 30 * time.Second

// ErrBoxStopped is returned by operations on a box whose init has ended
// (it was closed, or it died).
var ErrBoxStopped = errors.New("box stopped")

// Box is one running box: its init process, control connection, cgroup
// and egress session. All methods are safe for concurrent use.
type Box struct {
	task     string
	stateDir string
	workdir  string
	shell    string
	env      []string
	spec     wire.InitSpec
	// watch: the bind workspace as the box started; after each command
	// the host moves aside what is new and runs code (protect.Watch).
	watch   *protect.Watch
	persist bool
	initPID int
	cmd     *exec.Cmd // nil when attached
	fc      *wire.Conn
	// attachPath is the attach socket of a box another process runs, which
	// this Box reached through it (Attach); "" for the owner's Box.
	attachPath string
	conns      *net.UnixConn
	cg         cgroup.Group // nil when attached and the group was not found
	egress     *egress.BoxSession
	lock       *os.File
	ctx        context.Context
	cancel     context.CancelFunc
	nextID     atomic.Uint64
	oomKnown   atomic.Int64  // the box's OOM-kill counter when last read
	died       chan struct{} // closed when the control connection ends
	initDone   chan struct{} // closed when the init has exited and initState is set
	initState  *os.ProcessState
	closing    atomic.Bool // Close has begun: the init's end is not news
	phases     StartPhases
	refill     func() // makes the Manager's next spare (deferRefill); nil when there is none to make
	closeOnce  sync.Once
	closeErr   error
	userOnce   sync.Once     // imageRunAs (oci_user.go)
	user       *wire.Account // the image's User; nil = the box's root
	userErr    error

	mu        sync.Mutex
	handlers  map[uint64]func(wire.Response)
	dials     map[uint64]chan net.Conn
	listeners []net.Listener
	busy      int
	lastUsed  time.Time
	now       func() time.Time
	// attachedRunning is the number of commands attached processes run
	// in the box (wire.KindAttached; owner only); attachedChanged is closed
	// and replaced when it changes.
	attachedRunning int
	attachedChanged chan struct{}

	// bindWorkspace: an attached box's workspace is the host's, bound
	// (AttachInfo.BindWorkspace), which WatchAttached may watch.
	bindWorkspace bool
}

// Task is the task id of the box.
func (b *Box) Task() string { return b.task }

// InitPID is the host pid of the box's init (PID 1 inside).
func (b *Box) InitPID() int { return b.initPID }

// Died is closed when the box has stopped: its init ended (killed, the
// kernel's OOM killer included) or its control connection closed.
func (b *Box) Died() <-chan struct{} { return b.died }

// DeathReason says how the init of a box that stopped by itself ended.
func (b *Box) DeathReason() string { return b.deathReason() }

// Workdir is the default working directory of commands.
func (b *Box) Workdir() string { return b.workdir }

// Shell is the box's shell: /bin/bash, or /bin/sh when it has no bash.
func (b *Box) Shell() string { return b.shell }

// StartPhases reports how long the phases of this box's start took.
func (b *Box) StartPhases() StartPhases { return b.phases }

// Stats reads the box's cgroup counters.
func (b *Box) Stats() (cgroup.Stats, error) {
	if b.cg == nil {
		return cgroup.Stats{}, fmt.Errorf("box %s: cgroup not found", b.task)
	}
	return b.cg.Stats()
}

// waitInit reaps the init (the only Wait of b.cmd once the box runs).
func (b *Box) waitInit() {
	b.cmd.Wait()
	b.initState = b.cmd.ProcessState
	close(b.initDone)
}

// deathReason says how the init ended, for a box that stopped without
// being closed (waiting a moment for the exit status: the control socket
// closes as the init dies).
func (b *Box) deathReason() string {
	if b.Attached() {
		return "the hermes process that runs the box stopped it (or its init ended)"
	}
	select {
	case <-b.initDone:
	case <-time.After(2 * time.Second):
		return "the box's init stopped answering"
	}
	st := b.initState
	if st == nil {
		return "the box's init ended"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := unix.SignalName(ws.Signal())
		if ws.Signal() == syscall.SIGKILL {
			return "the box's init was killed by SIGKILL (by the host, or by the kernel's OOM killer: see terminal.container_memory)"
		}
		// Signals sent from inside the box are dropped (protectInit), so
		// this is a crash of the init itself.
		return fmt.Sprintf("the box's init died of %s (see %s)", sig, filepath.Join(b.stateDir, "init.log"))
	}
	return fmt.Sprintf("the box's init exited with status %d (see %s)", st.ExitCode(), filepath.Join(b.stateDir, "init.log"))
}

// run reads response frames until the control socket closes, then fails
// every outstanding request with ErrBoxStopped.
func (b *Box) run() {
	defer func() {
		close(b.died)
		b.mu.Lock()
		hs := b.handlers
		b.handlers = map[uint64]func(wire.Response){}
		b.mu.Unlock()
		for id, h := range hs {
			h(wire.Response{ID: id, Kind: wire.KindError, Err: ErrBoxStopped.Error()})
		}
	}()
	for {
		var r wire.Response
		if err := b.fc.Receive(&r); err != nil {
			return
		}
		if r.ID == 0 && r.Kind == wire.KindAttached {
			b.noteAttached(r.PID)
			continue
		}
		b.mu.Lock()
		h := b.handlers[r.ID]
		if r.Kind == wire.KindExit || r.Kind == wire.KindError || r.Kind == wire.KindOK {
			delete(b.handlers, r.ID)
		}
		b.mu.Unlock()
		if h != nil {
			h(r)
		}
	}
}

// runConns receives the sockets the init hands over: egress connections
// (id 0) go to the egress session, dialled ones to their waiter.
func (b *Box) runConns() {
	for {
		id, c, err := wire.ReceiveConn(b.conns)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-b.died:
				return
			default:
				continue
			}
		}
		if id == 0 {
			if b.egress == nil {
				c.Close()
				continue
			}
			go b.egress.ServeConn(b.ctx, c)
			continue
		}
		b.mu.Lock()
		ch := b.dials[id]
		delete(b.dials, id)
		b.mu.Unlock()
		if ch == nil {
			c.Close()
			continue
		}
		ch <- c
	}
}

// call registers h for a new request id, then sends the request.
func (b *Box) call(req wire.Request, h func(wire.Response)) (uint64, error) {
	req.ID = b.nextID.Add(1)
	b.mu.Lock()
	select {
	case <-b.died:
		b.mu.Unlock()
		return 0, ErrBoxStopped
	default:
	}
	b.handlers[req.ID] = h
	b.mu.Unlock()
	if err := b.fc.Send(req); err != nil {
		b.mu.Lock()
		delete(b.handlers, req.ID)
		b.mu.Unlock()
		return 0, fmt.Errorf("box %s: %w (%v)", b.task, ErrBoxStopped, err)
	}
	return req.ID, nil
}

// roundTrip sends one request and waits for its single reply.
func (b *Box) roundTrip(ctx context.Context, req wire.Request) (wire.Response, error) {
	ch := make(chan wire.Response, 1)
	if _, err := b.call(req, func(r wire.Response) { ch <- r }); err != nil {
		return wire.Response{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return wire.Response{}, ctx.Err()
	}
}

func (b *Box) touch(delta int) {
	b.mu.Lock()
	b.busy += delta
	b.lastUsed = b.now()
	b.mu.Unlock()
}

// idleSince reports when the box was last used, and whether it is busy
// (attached processes' commands included).
func (b *Box) idleSince() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastUsed, b.busy > 0 || b.attachedRunning > 0
}

func (b *Box) abs(p string) string {
	if p == "" {
		return b.workdir
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(b.workdir, p)
}

// commandEnv is the box's base environment plus extra, as KEY=VALUE
// lines, sorted.
func (b *Box) commandEnv(extra map[string]string) []string {
	if len(extra) == 0 {
		return b.env
	}
	m := map[string]string{}
	for _, kv := range b.env {
		if i := bytes.IndexByte([]byte(kv), '='); i > 0 {
			m[kv[:i]] = kv[i+1:]
		}
	}
	for k, v := range extra {
		m[k] = v
	}
	return sortedEnv(m)
}

func sortedEnv(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Close stops the box: every process in it is killed (SIGKILL to PID 1
// ends the pid namespace; the cgroup is swept too), its mounts vanish with
// its mount namespace, the bind workspace is checked a last time
// (protect.Watch), and its writable layer is kept (persistent) or deleted.
func (b *Box) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.stop() })
	return b.closeErr
}

func (b *Box) stop() error {
	b.refillNow()
	b.mu.Lock()
	lns := b.listeners
	b.listeners = nil
	b.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	if b.Attached() {
		// Only this process's connection ends; the init kills what it
		// started over it.
		b.closing.Store(true)
		b.fc.Close()
		<-b.died
		b.cancel()
		return nil
	}
	// SIGKILL to PID 1 makes the kernel kill every process of the box's pid
	// namespace, and its exit waits for them, so the group is empty then
	// and goes with one rmdir per hierarchy; only a group that still has
	// members (a process that left the namespace: none should) is frozen
	// and swept. While the kernel ends the box, a non-persistent box's
	// state goes but for its lock file, which this process holds until the
	// end so that no other one starts the box meanwhile.
	b.closing.Store(true)
	if b.cmd.Process != nil {
		b.cmd.Process.Signal(syscall.SIGKILL)
	}
	var cleared chan error
	if !b.persist {
		cleared = make(chan error, 1)
		go func() { cleared <- removeAllBut(b.stateDir, "lock") }()
	}
	<-b.initDone
	if b.cg.RemoveEmpty() != nil {
		b.cg.KillAll()
	}
	// Nothing in the box runs any more: a last check of the bind
	// workspace catches what a detached writer left after the last
	// command's (the note goes to the person). It walks the workspace
	// while the rest of the teardown runs and ends before the state goes.
	checked := make(chan struct{})
	go func() {
		b.watch.CheckForPerson()
		close(checked)
	}()
	b.fc.Close()
	b.conns.Close()
	b.cancel()
	var errs []error
	if err := b.cg.Remove(); err != nil {
		errs = append(errs, err)
	}
	if err := b.egress.Close(); err != nil {
		errs = append(errs, fmt.Errorf("egress session: %w", err))
	}
	if b.spec.LayerImage != "" {
		waitLoopReleased(b.spec.LayerImage, 3*time.Second)
	}
	if b.spec.AttachSocket != "" {
		os.Remove(b.spec.AttachSocket) // the init that listened on it is gone
	}
	// The check ends before the state (a non-persistent box's lock file
	// with it) goes: another process that locked a new state file could
	// otherwise start the box and take its baseline while this check
	// still moves things aside (attacker trial, 2026-12-06).
	<-checked
	os.Remove(filepath.Join(b.stateDir, uncheckedBaseline))
	if !b.persist {
		err := <-cleared
		if err == nil {
			err = os.RemoveAll(b.stateDir)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove box state %s: %w", b.stateDir, err))
		}
	}
	unix.Flock(int(b.lock.Fd()), unix.LOCK_UN)
	b.lock.Close()
	return errors.Join(errs...)
}

// removeAllBut removes everything in dir except the entry named keep.
func removeAllBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != keep {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// waitLoopReleased waits until no loop device is backed by image (the
// kernel detaches an autoclear loop device once its last mount is gone,
// which may lag the namespace teardown a little).
func waitLoopReleased(image string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if loopDeviceFor(image) == "" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// loopDeviceFor returns the loop device backed by image, or "".
func loopDeviceFor(image string) string {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		if string(bytes.TrimSpace(b)) == image || string(bytes.TrimSuffix(bytes.TrimSpace(b), []byte(" (deleted)"))) == image {
			return "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(m)))
		}
	}
	return ""
}
