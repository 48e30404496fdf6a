// Package box is hermes's own Linux sandbox, the "box" terminal backend
// (issue 3; design in shared/reference/sandbox.md §D2). A box is an
// overlay root (a read-only base: the host's "/" or a rootfs, plus a
// per-task writable layer) with the workspace mounted at its own path, run
// in fresh mount, pid, uts, ipc and net namespaces under a cgroup with
// memory, pids and cpu limits. Its PID 1 is this same binary (initproc.InitMain): it
// reaps children and serves commands and file operations for the host over
// an inherited socket, so no nsenter is needed per command. Commands run
// with no capabilities, no_new_privs, a seccomp filter and Landlock. The
// network namespace has only loopback; the init relays 127.0.0.1:3128 to
// the host's egress proxy. In host mode the homes and credential files of
// the host stay out of sight (hide.go). Options.Prestart keeps a booted
// init (in its own cgroup) and a layer disk image ready, so that a box
// start skips the init's boot and the cgroup attach (prestart.go).
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
	"sort"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/protect"
)

// Kind is the terminal.backend name of this backend.
const Kind = "box"

// Hostname is the box's host name.
const Hostname = "hermes-box"

// Options configure a Manager.
type Options struct {
	// Terminal is the terminal: config section (limits in cores and MiB,
	// box_image, box_workspace, cwd, container_persistent, lifetime_seconds).
	Terminal config.TerminalConfig
	// Home is HERMES_HOME; boxes keep state in Home/boxes/<task>, and Home
	// is hidden inside every box.
	Home string
	// Executable is the hermes binary (os.Executable in production; a
	// test binary in tests). Its hermes-box-init neighbour is the box init
	// when present (FindInitBinary); else Executable itself is.
	Executable string
	// InitBinary is the program run as every box's PID 1 with InitArgs
	// ("" = resolved from Executable as above).
	InitBinary string
	// InitArgs follow Executable on the init's command line (default
	// [wire.InitArg]).
	InitArgs []string
	// NewEgress creates the egress session of a box; nil = no egress at all
	// (connections from the box to 127.0.0.1:3128 are refused).
	NewEgress func(taskID string) (*egress.BoxSession, error)
	// UserHome is the invoking user's home directory, shown empty inside
	// host-mode boxes (default $HOME); /root, /home and the homes of login
	// users are emptied too (hide.go).
	UserHome string
	// Prestart keeps one box init spawned and booted ahead of need (from
	// NewManager on, and again after each box start), so that starting a
	// box skips the init's exec, Go runtime and package initialisation
	// (about 8 ms for the hermes binary). It costs one idle process with
	// fresh namespaces and no mounts, outside any cgroup until it is used.
	Prestart bool
	// Layers, when set, returns extra read-only layers (host directories,
	// topmost first) laid over the base image of the box of a task, e.g. a
	// template's files such as /usr/local/bin/hermes. Host-mode hiding is
	// judged on the base image alone.
	Layers func(task string) []string
	// Image, when set, returns the OCI image (an ociimage spec: registry
	// reference, layout dir or docker save tarball) a new box of task is
	// made from instead of terminal.box_image ("" = that one), e.g. a
	// sandbox template's. The box records it and keeps it on later starts.
	Image func(task string) string
	// Env is added to every command's environment (e.g. secret
	// placeholders). The agent's own provider keys must never be put here.
	Env map[string]string
	// LookupEnv reads the host environment for terminal.env_passthrough
	// (os.LookupEnv when nil); secret-looking names are never passed.
	LookupEnv func(name string) (string, bool)
	// SwitchUsers lets commands run as other users (ExecRequest.RunAs) and
	// files be given to them (Box.Chown): the box's init then keeps
	// CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL (to signal and kill
	// them), never passed to a command.
	// Only where the box runs without a user namespace (hermes as root).
	// A uid in the box is the same uid on the host.
	SwitchUsers bool
	// SudoUIDs are the uids whose commands in a box may use `sudo` to run
	// a command as the box's root, as E2B's templates give their `user`
	// passwordless sudo (the init's sudo socket and wire.SudoPath,
	// initproc/sudo_linux.go). Only with SwitchUsers and a hermes
	// Executable to bind as sudo; ignored otherwise.
	SudoUIDs []uint32
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Warn receives warnings a person should see, one line each, once
	// per Manager (e.g. an image's User that cannot apply); nil = none.
	Warn io.Writer
	// CgroupRoot is the parent group of the boxes' cgroups in each
	// hierarchy (DefaultCgroupRoot when empty; tests use one of their own).
	// Each box's group under it is named after the owning hermes process,
	// HERMES_HOME, a random id and the task (cgroup_owner.go).
	CgroupRoot string
	// AttachIdleTimeout closes a connection of another hermes process
	// attached to a box when it has no command running and sends nothing
	// for that long (0 = a minute; tests use less).
	AttachIdleTimeout time.Duration
}

// Manager is the box backend: one box per task id, started on first Open
// and reused, stopped after Terminal.LifetimeSeconds idle, all stopped by
// Close.
type Manager struct {
	opts Options
	now  func() time.Time

	owner      groupOwner // this process, named in the box cgroups
	homeKey    string     // HERMES_HOME's key in the box cgroup names
	cgroupRoot string
	sweepOnce  sync.Once
	sweepWG    sync.WaitGroup

	mu      sync.Mutex
	boxes   map[string]*Box
	starts  map[string]*sync.Mutex
	closed  bool
	stopIdl chan struct{}
	idleWG  sync.WaitGroup

	spareMu    sync.Mutex
	spare      *spawnedInit // a booted init waiting for its setup frame (Options.Prestart)
	spareDisk  string       // a fresh layer disk image for the next new persistent box ("" = none)
	spareMount *layerMount  // spareDisk's file system mounted by the host, or nil
	refilling  bool
	spareWG    sync.WaitGroup

	warnMu sync.Mutex
	warned map[string]bool // warnings given (Options.Warn), by text
}

var _ backend.Backend = (*Manager)(nil)

// isTaskID reports whether s may be a task id (it names a directory and a
// cgroup): a letter or digit, then up to 127 letters, digits, '.', '_' or
// '-'. (A hand-written check: the equivalent regexp, with its {0,127},
// took 0.2–0.7 ms to compile at every start of hermes and of each box
// init.)
func isTaskID(s string) bool { return isSimpleName(s, 128, true) }

// isSimpleName reports whether s is 1 to maxLen bytes of ASCII letters
// (lower case only unless upper), digits, '.', '_' and '-', not starting
// with one of the last three.
func isSimpleName(s string, maxLen int, upper bool) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', upper && c >= 'A' && c <= 'Z':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// reservedTaskIDs name directories of HERMES_HOME/boxes that are not boxes.
var reservedTaskIDs = map[string]bool{"snapshots": true, "images": true}

func checkTaskID(taskID string) error {
	if !isTaskID(taskID) || reservedTaskIDs[taskID] {
		return fmt.Errorf("box: task id %q: use letters, digits, '.', '_' and '-' (at most 128; not snapshots or images)", taskID)
	}
	return nil
}

// NewManager checks that boxes can run on this machine and returns a
// Manager. The error names the missing piece (Linux, root or user
// namespaces, overlayfs, cgroup controllers) and how to fix it.
func NewManager(opts Options) (*Manager, error) {
	if opts.Home == "" {
		return nil, errors.New("box: HERMES_HOME is not set")
	}
	if opts.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("box: find the hermes binary to run as box init: %w", err)
		}
		opts.Executable = exe
	}
	resolveInit(&opts)
	if err := Preflight(); err != nil {
		return nil, err
	}
	t := &opts.Terminal
	d := config.Defaults().Terminal
	if t.ContainerCPU == 0 {
		t.ContainerCPU = d.ContainerCPU
	}
	if t.ContainerMemory == 0 {
		t.ContainerMemory = d.ContainerMemory
	}
	if t.ContainerDisk == 0 {
		t.ContainerDisk = d.ContainerDisk
	}
	if t.BoxPids == 0 {
		t.BoxPids = d.BoxPids
	}
	if t.ContainerPersistent == nil {
		t.ContainerPersistent = d.ContainerPersistent
	}
	if t.BoxWorkspace == "" {
		t.BoxWorkspace = "bind"
	}
	if t.ProtectedPaths == nil {
		t.ProtectedPaths = d.ProtectedPaths // [] (not nil) turns them off
	}
	if t.BoxWorkspace != "bind" && t.BoxWorkspace != "overlay" {
		return nil, fmt.Errorf("terminal.box_workspace: %q is not bind or overlay", t.BoxWorkspace)
	}
	if t.ContainerCPU < 0 || t.ContainerMemory < 0 || t.ContainerDisk < 0 || t.BoxPids < 0 {
		return nil, errors.New("terminal.container_cpu, container_memory, container_disk and box_pids must not be negative")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	owner, err := processOwner(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	root := opts.CgroupRoot
	if root == "" {
		root = DefaultCgroupRoot
	}
	m := &Manager{opts: opts, now: now, boxes: map[string]*Box{}, starts: map[string]*sync.Mutex{},
		stopIdl: make(chan struct{}), owner: owner, homeKey: homeKey(opts.Home), cgroupRoot: root}
	if t.LifetimeSeconds > 0 {
		m.idleWG.Add(1)
		go m.stopIdle(time.Duration(t.LifetimeSeconds) * time.Second)
	}
	m.refillSpare()
	return m, nil
}

// Kind returns "box".
func (m *Manager) Kind() string { return Kind }

// Isolated is true: a box is the boundary (backend.Isolated).
func (m *Manager) Isolated() bool { return true }

// StateDir is where the box of taskID keeps its state.
func (m *Manager) StateDir(taskID string) string {
	return filepath.Join(m.opts.Home, "boxes", taskID)
}

// Open returns the environment of taskID. The box starts on the first
// operation (or now, to report start errors early) and is restarted
// transparently if it was stopped for being idle.
func (m *Manager) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	if _, err := m.Box(ctx, taskID); err != nil {
		return nil, err
	}
	return &taskEnv{m: m, task: taskID}, nil
}

// Box returns the running box of taskID, starting it if needed.
func (m *Manager) Box(ctx context.Context, taskID string) (*Box, error) {
	if err := checkTaskID(taskID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("box: the box backend is closed")
	}
	sl := m.starts[taskID]
	if sl == nil {
		sl = &sync.Mutex{}
		m.starts[taskID] = sl
	}
	m.mu.Unlock()
	sl.Lock()
	defer sl.Unlock()
	m.mu.Lock()
	b := m.boxes[taskID]
	m.mu.Unlock()
	if b != nil {
		select {
		case <-b.died:
			b.Close() // the init died (e.g. killed): start afresh
		default:
			if !b.attachIdle(m.attachIdleTimeout()) {
				return b, nil
			}
			// The init is about to close this idle attached connection:
			// a command sent now could meet its end.
			b.Close()
		}
	}
	b, err := m.attachOrStart(ctx, taskID)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.boxes[taskID] = b
	}
	m.mu.Unlock()
	if closed {
		b.Close()
		return nil, errors.New("box: the box backend is closed")
	}
	return b, nil
}

// wire.AttachIdleTimeout is Options.AttachIdleTimeout or its default.
func (m *Manager) attachIdleTimeout() time.Duration {
	if m.opts.AttachIdleTimeout > 0 {
		return m.opts.AttachIdleTimeout
	}
	return wire.AttachIdleTimeout
}

// attachIdle reports whether b is attached and has been idle for half of
// timeout, the init's idle timeout of attached connections.
func (b *Box) attachIdle(timeout time.Duration) bool {
	last, busy := b.idleSince()
	return b.Attached() && !busy && b.now().Sub(last) >= timeout/2
}

// attachWait bounds how long Box waits for a box that another process
// holds the lock of (it may be booting it) to become attachable.
const attachWait = 5 * time.Second

// attachOrStart attaches to the box of taskID when another process runs
// it (see Attach), else starts it. A box whose state lock another process
// holds but whose attach socket is not up yet (it is booting) is waited
// for, up to attachWait.
func (m *Manager) attachOrStart(ctx context.Context, taskID string) (*Box, error) {
	deadline := time.Now().Add(attachWait)
	for {
		b, err := Attach(ctx, m.opts.Home, taskID)
		if err == nil {
			if err := b.CheckWorkspace(m.workspace()); err != nil {
				b.Close()
				return nil, err
			}
			b.WatchAttached(m.opts.Terminal.ProtectedPaths)
			return b, nil
		}
		if !errors.Is(err, ErrNotRunning) {
			return nil, err
		}
		b, err = m.startBox(ctx, taskID)
		if err == nil || !errors.Is(err, ErrInUse) || time.Now().After(deadline) {
			return b, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// forget drops b, the box of taskID that stopped serving it, and closes
// it: the next Box attaches or starts afresh.
func (m *Manager) forget(taskID string, b *Box) {
	m.mu.Lock()
	if m.boxes[taskID] == b {
		delete(m.boxes, taskID)
	}
	m.mu.Unlock()
	b.Close()
}

// Running lists the task ids of the boxes running in this Manager.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.boxes))
	for t := range m.boxes {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Stop stops the box of taskID if it runs (its persistent layer is kept).
func (m *Manager) Stop(taskID string) error {
	m.mu.Lock()
	b := m.boxes[taskID]
	delete(m.boxes, taskID)
	m.mu.Unlock()
	if b == nil {
		return nil
	}
	return b.Close()
}

// Remove stops the box of taskID and deletes its state, persistent layer
// included. Removing a box that does not exist is an error wrapping
// fs.ErrNotExist.
func (m *Manager) Remove(taskID string) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	if err := m.Stop(taskID); err != nil {
		return err
	}
	dir := m.StateDir(taskID)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("box %s: %w", taskID, fs.ErrNotExist)
	}
	lock, err := lockState(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	// A baseline a killed hermes left is checked before it goes with the
	// state: the next start would have (resumeWatch).
	checkLeftBaseline(dir, protect.New(m.opts.Terminal.ProtectedPaths), m.opts.Warn)
	return os.RemoveAll(dir)
}

// Close stops every box (persistent layers are kept).
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	boxes := m.boxes
	m.boxes = map[string]*Box{}
	m.mu.Unlock()
	close(m.stopIdl)
	// The boxes stop at the same time as each other and as the background
	// jobs are waited for (a box's stop mostly waits for the kernel).
	errs := make([]error, 0, len(boxes))
	var errMu sync.Mutex
	var stops sync.WaitGroup
	for _, b := range boxes {
		stops.Go(func() {
			if err := b.Close(); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		})
	}
	m.idleWG.Wait()
	m.spareWG.Wait()
	m.sweepWG.Wait()
	m.spareMu.Lock()
	if m.spare != nil {
		m.spare.kill()
		os.Remove(m.spare.log)
		m.spare = nil
	}
	m.spareMount.Close() // before the image goes: this unmounts it
	m.spareMount = nil
	if m.spareDisk != "" {
		waitLoopReleased(m.spareDisk, 3*time.Second)
		os.Remove(m.spareDisk)
		m.spareDisk = ""
	}
	m.spareMu.Unlock()
	stops.Wait()
	return errors.Join(errs...)
}

// stopIdle stops boxes unused for lifetime, checking a few times per
// lifetime.
func (m *Manager) stopIdle(lifetime time.Duration) {
	defer m.idleWG.Done()
	tick := time.NewTicker(min(max(lifetime/4, 10*time.Millisecond), 10*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-m.stopIdl:
			return
		case <-tick.C:
		}
		now := m.now()
		m.mu.Lock()
		var idle []string
		for t, b := range m.boxes {
			if last, busy := b.idleSince(); !busy && now.Sub(last) >= lifetime {
				idle = append(idle, t)
			}
		}
		m.mu.Unlock()
		for _, t := range idle {
			m.stopIfIdle(t, lifetime)
		}
	}
}

func (m *Manager) stopIfIdle(taskID string, lifetime time.Duration) {
	m.mu.Lock()
	sl := m.starts[taskID]
	m.mu.Unlock()
	if sl == nil {
		return
	}
	sl.Lock()
	defer sl.Unlock()
	m.mu.Lock()
	b := m.boxes[taskID]
	if b != nil {
		if last, busy := b.idleSince(); busy || m.now().Sub(last) < lifetime {
			b = nil
		} else {
			delete(m.boxes, taskID)
		}
	}
	m.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

// taskEnv is the backend.Environment handed out by Open: every call goes
// to the task's live box, restarting it if it was stopped when idle.
type taskEnv struct {
	m    *Manager
	task string
}

func (e *taskEnv) box(ctx context.Context) (*Box, error) { return e.m.Box(ctx, e.task) }

func (e *taskEnv) Workdir() string {
	if b, err := e.box(context.Background()); err == nil {
		return b.Workdir()
	}
	return e.m.workspace()
}

func (e *taskEnv) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	return startAfresh(ctx, e, func(b *Box) (backend.ExecResult, error) { return b.Exec(ctx, req) })
}

func (e *taskEnv) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	return startAfresh(ctx, e, func(b *Box) (backend.Process, error) { return b.Start(ctx, req) })
}

// startAfresh runs run (a command's start) in the task's box. When the
// box is attached and its owner was stopping it, the command was refused
// before it started (ErrNotRunning): the box is dropped and run runs once
// more in the box Manager.Box returns then, started afresh once the owner
// has released it (or run by a new owner).
func startAfresh[T any](ctx context.Context, e *taskEnv, run func(*Box) (T, error)) (T, error) {
	b, err := e.box(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := run(b)
	if err == nil || !b.Attached() || !errors.Is(err, ErrNotRunning) {
		return v, err
	}
	e.m.forget(e.task, b)
	if b, err = e.box(ctx); err != nil {
		return v, err
	}
	return run(b)
}

// DialUnix implements backend.UnixDialer: the box's init connects to the
// socket inside the box.
func (e *taskEnv) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	b, err := e.box(ctx)
	if err != nil {
		return nil, err
	}
	return b.DialUnix(ctx, path)
}

func (e *taskEnv) ReadFile(ctx context.Context, path string) ([]byte, error) {
	b, err := e.box(ctx)
	if err != nil {
		return nil, err
	}
	return b.ReadFile(ctx, path)
}

func (e *taskEnv) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	b, err := e.box(ctx)
	if err != nil {
		return err
	}
	return b.WriteFile(ctx, path, data, perm)
}

func (e *taskEnv) Stat(ctx context.Context, path string) (backend.FileInfo, error) {
	b, err := e.box(ctx)
	if err != nil {
		return backend.FileInfo{}, err
	}
	return b.Stat(ctx, path)
}

func (e *taskEnv) ReadDir(ctx context.Context, path string) ([]backend.FileInfo, error) {
	b, err := e.box(ctx)
	if err != nil {
		return nil, err
	}
	return b.ReadDir(ctx, path)
}

// Close stops the task's box (its persistent layer is kept).
func (e *taskEnv) Close() error { return e.m.Stop(e.task) }
