package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/box/image"
	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/protect"
)

// boxPath is PATH inside the box.
// wire.HermesBinDir (the hermes binary, bound by the init) comes last, so
// a hermes the image or host installed on the usual PATH wins.
const boxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + wire.HermesBinDir

// Preflight reports why boxes cannot run on this machine, or nil. Each
// error names the missing piece and the fix; hermes never falls back to
// running commands on the host.
func Preflight() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("box: the box backend needs Linux (this is %s): set terminal.backend: local, or run hermes in a Linux VM", runtime.GOOS)
	}
	fss, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Errorf("box: read /proc/filesystems: %w (is /proc mounted?)", err)
	}
	if !strings.Contains(string(fss), "\toverlay\n") {
		return errors.New("box: the kernel has no overlayfs: load it (modprobe overlay) or use a kernel built with CONFIG_OVERLAY_FS")
	}
	if os.Geteuid() != 0 && !userNamespacesAllowed() {
		return errors.New("box: hermes is not root and unprivileged user namespaces are disabled: run hermes as root, or enable them (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces>0)")
	}
	return nil
}

func userNamespacesAllowed() bool {
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false
	}
	return true
}

// workspace is the absolute workspace path (terminal.cwd, default the
// current directory).
func (m *Manager) workspace() string { return ResolveWorkspace(m.opts.Terminal.Cwd) }

// checkWorkspace refuses workspaces a box must not mount read-write:
// the host's "/" (the whole host), and a directory that contains
// HERMES_HOME deeper than as a direct child or lies inside it (the box
// could move HERMES_HOME's parent on the host and find it uncovered at the
// next start, or write into it).
func (m *Manager) checkWorkspace(ws string) error {
	if ws == "" || ws == "/" {
		return errors.New("box: the workspace is / (terminal.cwd, or the current directory): a box mounts its workspace read-write, and the whole host cannot be one; run hermes from a project directory or set terminal.cwd to one")
	}
	for _, home := range m.hiddenPaths() {
		switch {
		case filepath.Dir(home) == ws:
			// HERMES_HOME directly in the workspace (hermes run from ~ with
			// ~/.hermes): it is covered inside the box, and being a mount
			// point there it can be neither renamed nor removed, while its
			// parent is the workspace mount itself.
		case underAny(home, []string{ws}):
			return fmt.Errorf("box: the workspace %s contains HERMES_HOME %s, which a box must never reach: run hermes from a project directory, set terminal.cwd to one, or move HERMES_HOME out of the workspace", ws, home)
		case underAny(ws, []string{home}):
			return fmt.Errorf("box: the workspace %s is inside HERMES_HOME %s: run hermes from a project directory or set terminal.cwd to one", ws, home)
		}
	}
	return nil
}

// persistent reports terminal.container_persistent (default true).
func (m *Manager) persistent() bool {
	p := m.opts.Terminal.ContainerPersistent
	return p == nil || *p
}

// ErrInUse is wrapped by the error of an operation on a box another hermes
// process holds (runs, snapshots or removes).
var ErrInUse = errors.New("in use by another hermes process")

// lockState takes the exclusive lock of a box state dir so that two
// hermes processes never run (or snapshot) the same box at once.
func lockState(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("box state %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("box %s is %w (lock %s): stop it first", filepath.Base(dir), ErrInUse, f.Name())
	}
	return f, nil
}

// resolveBase returns the read-only lower layers for terminal.box_image
// (see ResolveImage: host "/", a built image, a rootfs dir or a tarball).
func (m *Manager) resolveBase() ([]string, error) {
	if lower, ok, err := m.resolveOCIBase(); ok {
		return lower, err
	}
	dir, err := image.Resolve(m.opts.Home, m.opts.Terminal.BoxImage)
	if err != nil {
		return nil, err
	}
	return []string{dir}, nil
}

// hiddenPaths are the host paths covered inside every box: HERMES_HOME
// (config, .env, state.db, other boxes' layers).
func (m *Manager) hiddenPaths() []string {
	home, _ := filepath.Abs(m.opts.Home)
	out := []string{home}
	if real, err := filepath.EvalSymlinks(home); err == nil && real != home {
		out = append(out, real)
	}
	return out
}

// baseEnv is the environment of every command: the host variables named
// in terminal.env_passthrough (secret-looking names excluded), then PATH,
// HOME, TERM, LANG, HERMES_SESSION_ID, an OCI image's Env, the egress variables and
// Options.Env, each overriding the earlier. Nothing else of the agent's
// own environment is passed.
func (m *Manager) baseEnv(task string, egressEnv map[string]string) []string {
	env := map[string]string{}
	for k, v := range m.passthroughEnv() {
		env[k] = v
	}
	for k, v := range map[string]string{"PATH": boxPath, "HOME": "/root", "TERM": "xterm-256color", "LANG": "C.UTF-8",
		"HERMES_SESSION_ID": task} {
		if _, passed := env[k]; !passed || k == "PATH" || k == "HOME" || k == "HERMES_SESSION_ID" {
			env[k] = v
		}
	}
	imageEnv(m.StateDir(task), env) // an OCI image's Env (oci_image.go)
	for k, v := range egressEnv {
		env[k] = v
	}
	for k, v := range m.opts.Env {
		env[k] = v
	}
	return sortedEnv(env)
}

// passthroughEnv returns the host variables named in
// terminal.env_passthrough that are set (Options.LookupEnv), as the local
// backend passes them (Hermes "configuration.md": env_passthrough).
// Unlike there, names that look like credentials (local.IsSecretName:
// provider keys, *_API_KEY, *_TOKEN, *PASSWORD*, HERMES_*) never reach a
// box, listed or not: a secret goes in through hermes secrets set, whose
// placeholder the egress proxy swaps on the wire. TERM and LANG may be
// passed; PATH, HOME and HERMES_SESSION_ID stay the box's own.
func (m *Manager) passthroughEnv() map[string]string {
	lookup := m.opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := map[string]string{}
	for _, name := range m.opts.Terminal.EnvPassthrough {
		if name == "" || strings.ContainsAny(name, "=\x00") || local.IsSecretName(name) {
			continue
		}
		if v, ok := lookup(name); ok {
			out[name] = v
		}
	}
	return out
}

// StartPhases are how long the phases of a box's start took (wall time).
// Prepare+Spawn+Boot+Root+Restrict is about Total.
type StartPhases struct {
	Prepare  time.Duration // state dir, lock, cgroup, base image, disk image, egress session, layer mount (Disk included; runs while the init boots)
	Disk     time.Duration // copying the ext4 image of a new persistent layer (0 when it existed or the layer is a tmpfs)
	Mount    time.Duration // the host's mount of the persistent layer (layerMount; concurrent with the rest of Prepare, 0 when a prestarted image came mounted)
	Spawn    time.Duration // clone(2)+execve(2) of the init, until exec.Cmd.Start returns
	Boot     time.Duration // from the setup frame until the init's answer, minus Root and Restrict: what is left of the init's Go runtime and package init after Prepare, plus transport
	Root     time.Duration // in the init: the writable layer, overlay, /proc, /dev, workspace, hidden paths, pivot_root
	Restrict time.Duration // in the init: Landlock, capabilities, seccomp
	Attach   time.Duration // moving the init into its cgroup (concurrent with Boot, Root and Restrict)
	Total    time.Duration
}

// startBox builds and starts the box of task. The init is spawned and
// joins its cgroup first, so that its boot (the Go runtime and package init
// of the binary) and the cgroup attach (an RCU grace period on cgroup v1)
// run while the host prepares the rest: the base, the layer's disk image,
// the egress session.
func (m *Manager) startBox(ctx context.Context, task string) (b *Box, err error) {
	began := time.Now()
	var ph StartPhases
	t := m.opts.Terminal
	workspace := m.workspace()
	if err := m.checkWorkspace(workspace); err != nil {
		return nil, err
	}
	views := make(chan hostView, 1)
	go func() { views <- m.hostView(workspace) }() // while the state, lock and cgroup are made
	dir := m.StateDir(task)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("box state dir: %w", err)
	}
	lock, err := lockState(dir)
	if err != nil {
		return nil, err
	}
	// The bind workspace as it is before any command (protect.Watch): a
	// walk of the whole tree, taken while the init boots (on a 1,600-
	// directory workspace it took ~10% of a hermes box exec --new). Only
	// once the state is locked: a previous owner's stop check has ended
	// then, and a start that waits for the lock walks nothing.
	var watched chan *protect.Watch
	if t.BoxWorkspace != "overlay" {
		watched = make(chan *protect.Watch, 1)
		go func() { watched <- protect.New(t.ProtectedPaths).Watch(workspace, true) }()
	}
	var cleanups []func()
	defer func() {
		if err != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
			lock.Close()
			if !m.persistent() {
				os.RemoveAll(dir)
			}
		}
	}()
	recordStartedWorkspace(dir, workspace, t.BoxWorkspace == "overlay")
	if t.BoxWorkspace == "overlay" && m.persistent() {
		if err = m.recordWorkspace(dir, workspace); err != nil {
			return nil, err
		}
	}
	// A prestarted init comes in a cgroup of its own with the box limits,
	// which only needs renaming; otherwise the init is spawned first and
	// joins a new group while it boots and the host prepares the rest: a
	// cgroup v1 attach waits for an RCU grace period (several ms). The init
	// forks nothing before the host's first request, and accepts no
	// attached connection before the host's wire.OpJoined, both sent once the
	// attach is done.
	userNS := os.Geteuid() != 0
	m.sweepLeftovers()
	init := m.takeSpare(dir)
	if init == nil {
		if init, err = m.spawnInit(filepath.Join(dir, "init.log"), userNS); err != nil {
			return nil, fmt.Errorf("box %s: %w", task, err)
		}
		ph.Spawn = init.spawn
	}
	var cg cgroup.Group
	cleanups = append(cleanups, func() {
		init.kill()
		if cg != nil {
			cg.KillAll()
			cg.Remove()
		}
	})
	var joined func() error
	if cg, joined, err = m.joinCgroup(init, task, &ph); err != nil {
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	defer func() {
		if err != nil {
			m.refillSpare()
		}
	}()
	cleanups = append(cleanups, func() { joined() })
	view := <-views
	if err = view.err; err != nil {
		return nil, err
	}
	spec, err := m.initSpec(task, dir, workspace, view, cg, userNS)
	if err != nil {
		return nil, err
	}
	if userNS {
		m.warnImageUser(dir) // oci_user.go
	}
	hostLayer, err := m.prepareLayer(&spec, dir, userNS, &ph)
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() {
		if lm := hostLayer(); lm != nil {
			lm.Close()
		}
	})
	sess, err := m.newEgress(task)
	if err != nil {
		return nil, err
	}
	if sess != nil {
		cleanups = append(cleanups, func() { sess.Close() })
		spec.EgressPort = egress.ProxyPort
		spec.CACertPEM = sess.CACertPEM
	}
	bctx, cancel := context.WithCancel(context.Background())
	cleanups = append(cleanups, cancel, func() { os.Remove(spec.AttachSocket) })
	spec.Env = m.baseEnv(task, sessEnv(sess))
	b = &Box{
		task: task, stateDir: dir, workdir: spec.Workspace, shell: "/bin/sh",
		env: spec.Env, spec: spec, persist: m.persistent(), initPID: init.cmd.Process.Pid,
		cmd: init.cmd, fc: wire.NewConn(init.ctrl), conns: init.conns.(*net.UnixConn), cg: cg, egress: sess, lock: lock,
		ctx: bctx, cancel: cancel, died: make(chan struct{}), initDone: make(chan struct{}), handlers: map[uint64]func(wire.Response){},
		dials: map[uint64]chan net.Conn{}, now: m.now, lastUsed: m.now(),
	}
	if lm := hostLayer(); lm != nil {
		if err := lm.send(b.conns); err != nil {
			return nil, fmt.Errorf("box %s: pass the layer mount: %w", task, err)
		}
		spec.LayerMounted = true
	}
	ph.Prepare = time.Since(began) - ph.Spawn
	readyWait := time.Now()
	if err := b.setUp(ctx, init, &spec, &ph); err != nil {
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	ph.Boot = time.Since(readyWait) - ph.Root - ph.Restrict
	if watched != nil {
		// Before the box is returned: no command ran yet.
		b.watch = resumeWatch(dir, workspace, protect.New(t.ProtectedPaths), <-watched)
	}
	if err = joined(); err != nil {
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	if err = b.fc.Send(wire.Request{Op: wire.OpJoined}); err != nil {
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	b.oomKnown.Store(cg.OOMKills())
	b.deferRefill(m)
	go b.waitInit()
	go b.run()
	go b.runConns()
	ph.Total = time.Since(began)
	b.phases = ph
	return b, nil
}

// wire.InitSpec is the setup the init of task gets: its layers, state dirs
// (made here), workspace, the host paths it shows empty or covers, its
// attach socket (a stale one removed: the caller holds the state lock)
// and cgroup.
func (m *Manager) initSpec(task, dir, workspace string, view hostView, cg cgroup.Group, userNS bool) (wire.InitSpec, error) {
	t := m.opts.Terminal
	view, err := m.boxView(task, dir, view) // a box on an OCI image keeps it (oci_image.go)
	if err != nil {
		return wire.InitSpec{}, err
	}
	lower := view.lower
	if m.opts.Layers != nil {
		lower = append(m.opts.Layers(task), lower...)
	}
	// An OCI image's User needs the init's CAP_SETUID (oci_user.go).
	spec := wire.InitSpec{SwitchUsers: (m.opts.SwitchUsers || imageUser(dir) != "") && !userNS,
		Task: task, Lower: lower, LayerDir: filepath.Join(dir, "layer"), DiskMiB: t.ContainerDisk, TmpMiB: tmpSizeMiB(t),
		Merged: filepath.Join(dir, "merged"), Workspace: workspace,
		WorkspaceOverlay: t.BoxWorkspace == "overlay", Protected: t.ProtectedPaths, Empty: view.empty, Hide: view.hide, Hostname: Hostname,
		UserNS: userNS, Landlock: true, AttachSocket: filepath.Join(dir, wire.AttachSocketName), AttachIdle: m.opts.AttachIdleTimeout, Cgroup: cg.Name(),
	}
	if !spec.WorkspaceOverlay {
		// What the workspace's repository config points to in the
		// workspace (core.hooksPath, include.path, linked hooks) is
		// read-only in the box too.
		set := protect.New(t.ProtectedPaths)
		spec.Protected = set.With(set.Pointed(workspace)).Paths()
	}
	spec.HermesExe, spec.HermesNames = hermesInBox(m.opts.Executable)
	if spec.SwitchUsers && m.opts.SwitchUsers && spec.HermesExe != "" {
		spec.SudoUIDs = m.opts.SudoUIDs
		spec.SudoPathDirs = imageSudoPathDirs(dir)
	}
	os.Remove(spec.AttachSocket) // left by an init that died
	for _, d := range []string{spec.LayerDir, spec.Merged} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return wire.InitSpec{}, fmt.Errorf("box state dir: %w", err)
		}
	}
	return spec, nil
}

// joinCgroup gives the init its cgroup: a prestarted spare's own, renamed,
// or a new one with the box limits, which the init joins in the background
// (a cgroup v1 attach waits for an RCU grace period, several ms) while the
// host prepares the rest. joined waits for the join and returns its error.
// On error cg is nil.
func (m *Manager) joinCgroup(init *spawnedInit, task string, ph *StartPhases) (cg cgroup.Group, joined func() error, err error) {
	if init.cg != nil && init.cg.Rename(m.groupPath(init.groupID, task)) == nil {
		return init.cg, func() error { return nil }, nil
	}
	if cg, err = cgroup.New(m.groupPath(newGroupID(), task), m.limits()); err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	var attachErr error
	go func() {
		defer close(done)
		t0 := time.Now()
		attachErr = cg.Add(init.cmd.Process.Pid)
		ph.Attach = time.Since(t0)
		if init.cg != nil { // the spare's own group, now empty
			init.cg.Remove()
		}
	}()
	return cg, func() error { <-done; return attachErr }, nil
}

// prepareLayer gives a persistent box (as root) its layer image: the
// existing one, checked not to be mounted elsewhere; a prestarted spare's,
// already mounted; or a new one. The host mounts it detached (layerMount)
// while the init boots; the returned func waits for that mount, nil when
// the init is to mount the image by path (no persistent layer, a user
// namespace, or a host mount that failed: the init reports what fails).
func (m *Manager) prepareLayer(spec *wire.InitSpec, dir string, userNS bool, ph *StartPhases) (func() *layerMount, error) {
	if err := checkRestoreComplete(dir); err != nil {
		return nil, err
	}
	if !m.persistent() || userNS {
		return func() *layerMount { return nil }, nil
	}
	spec.LayerImage = filepath.Join(dir, "disk.img")
	diskBegan := time.Now()
	mounted := make(chan *layerMount, 1)
	if _, err := os.Stat(spec.LayerImage); err == nil {
		if err := awaitImageFree(spec.LayerImage, layerReleaseWait); err != nil {
			return nil, err // mounted elsewhere: a second mount corrupts it
		}
	} else if m.ownImage(spec.Task) {
		// The spare's layer is laid out for the Manager's base.
		if err := m.ensureDiskImage(spec.LayerImage, m.opts.Terminal.ContainerDisk); err != nil {
			return nil, err
		}
	} else if ok, lm := m.takeSpareDisk(spec.LayerImage); ok {
		mounted <- lm
	} else if err := m.ensureDiskImage(spec.LayerImage, m.opts.Terminal.ContainerDisk); err != nil {
		return nil, err
	}
	ph.Disk = time.Since(diskBegan)
	if len(mounted) == 0 {
		go func(path string) {
			t0 := time.Now()
			lm, err := mountLayerDetached(path)
			ph.Mount = time.Since(t0)
			if err != nil {
				lm = nil
			} else {
				// What a killed restore left takes the box's disk space
				// (best effort: the start goes on).
				removeStaleRestores(initproc.FDPath(lm.fd))
			}
			mounted <- lm
		}(spec.LayerImage)
	}
	return sync.OnceValue(func() *layerMount { return <-mounted }), nil
}

// setUp sends the booted init its setup and waits (startTimeout at most)
// for it to report the box ready, recording the init's phases and the
// box's shell.
func (b *Box) setUp(ctx context.Context, init *spawnedInit, spec *wire.InitSpec, ph *StartPhases) error {
	// The boot byte comes before any frame: read it before b.fc decodes.
	if err := init.waitBooted(ctx); err != nil {
		return err
	}
	if err := b.fc.Send(wire.Request{Op: wire.OpSetup, Setup: spec}); err != nil {
		return fmt.Errorf("send setup: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		var r wire.Response
		if err := b.fc.Receive(&r); err != nil {
			log, _ := os.ReadFile(filepath.Join(b.stateDir, "init.log"))
			ready <- fmt.Errorf("box init exited during setup: %v %s", err, strings.TrimSpace(string(log)))
			return
		}
		if r.Kind != wire.KindReady {
			ready <- errors.New(r.Err)
			return
		}
		if r.Phases != nil {
			ph.Root, ph.Restrict = r.Phases.Root, r.Phases.Restrict
		}
		if r.Shell != "" {
			b.shell = r.Shell
		}
		ready <- nil
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("no answer from the init within %s", startTimeout)
	}
}

// hostView is what a box start needs to know of the host: the base
// image's lower layers, and in host mode the directories the box shows
// empty and the paths it covers (privateHostPaths).
type hostView struct {
	lower, empty, hide []string
	err                error
}

// hostView resolves the base image and the host paths kept out of sight
// of a box with workspace ws.
func (m *Manager) hostView(ws string) hostView {
	lower, err := m.resolveBase()
	if err != nil {
		return hostView{err: err}
	}
	empty, hide := m.privateHostPaths(lower)
	return hostView{lower: lower, empty: empty, hide: pruneHidden(hide, initproc.RealDirs(empty), ws)}
}

// tmpSizeMiB is the size of a box's /tmp tmpfs: min(container_disk,
// container_memory/2) MiB (/var/tmp gets half of it). A tmpfs lives in
// memory and is charged to the box's memory cgroup, so a /tmp sized to the
// disk limit (50 GiB by default) ends in an OOM kill when it fills up;
// sized below the memory limit, a full /tmp gives ENOSPC and leaves the
// other half of the memory to processes.
func tmpSizeMiB(t config.TerminalConfig) int {
	size := t.ContainerDisk
	if t.ContainerMemory > 0 {
		size = min(size, t.ContainerMemory/2)
	}
	return max(size, 1)
}

// limits are the cgroup limits of every box of m.
func (m *Manager) limits() cgroup.Limits {
	t := m.opts.Terminal
	return cgroup.Limits{MemoryBytes: int64(t.ContainerMemory) << 20, PIDs: t.BoxPids, CPUs: t.ContainerCPU}
}

// ErrInitMismatch is a box init of another hermes build: it speaks
// another frame protocol (wire.Version).
var ErrInitMismatch = errors.New("the box init is of another hermes build")

// spawnedInit is a box init that runs but has not been set up yet.
type spawnedInit struct {
	cg      cgroup.Group // the group it already runs in (a prestarted init), or nil
	groupID string       // the id in cg's name
	cmd     *exec.Cmd
	ctrl    net.Conn // host end of the control socket
	conns   net.Conn // host end of the connection socket
	log     string   // its stdout and stderr
	spawn   time.Duration
	booted  chan struct{} // closed when the init said it booted, or its control socket failed
	bootErr error         // why it did not boot; read after booted is closed
}

// readBooted waits for the init's boot byte on the control socket (before
// any frame is decoded from it) and closes i.booted.
func (i *spawnedInit) readBooted() {
	defer close(i.booted)
	var b [1]byte
	switch _, err := io.ReadFull(i.ctrl, b[:]); {
	case err != nil:
		i.bootErr = fmt.Errorf("box init exited while booting: %w", err)
	case b[0] == wire.LegacyBootedByte:
		i.bootErr = fmt.Errorf("%w: %s is of an older hermes (frame protocol 1 or older; this hermes speaks %d): install hermes and hermes-box-init from the same build (make install, ./install.sh, or go build -o DIR/ ./cmd/hermes ./cmd/hermes-box-init)",
			ErrInitMismatch, i.cmd.Path, wire.Version)
	case b[0] != wire.BootedByte:
		i.bootErr = fmt.Errorf("%w: %s sent boot byte %q, not %q (frame protocol %d): install hermes and hermes-box-init from the same build (make install, ./install.sh, or go build -o DIR/ ./cmd/hermes ./cmd/hermes-box-init)",
			ErrInitMismatch, i.cmd.Path, b[0], byte(wire.BootedByte), wire.Version)
	}
}

// isBooted reports whether the init has booted (without waiting).
func (i *spawnedInit) isBooted() bool {
	select {
	case <-i.booted:
		return i.bootErr == nil
	default:
		return false
	}
}

// waitBooted waits until the init has booted, ctx ends or startTimeout
// passes.
func (i *spawnedInit) waitBooted(ctx context.Context) error {
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-i.booted:
		if i.bootErr != nil {
			log, _ := os.ReadFile(i.log)
			return fmt.Errorf("%w %s", i.bootErr, strings.TrimSpace(string(log)))
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("the init did not boot within %s", startTimeout)
	}
}

// kill ends the init (and removes the group it came in, if any).
func (i *spawnedInit) kill() {
	i.cmd.Process.Kill()
	i.cmd.Wait()
	i.ctrl.Close()
	i.conns.Close()
	if i.cg != nil {
		i.cg.Remove()
	}
}

// initEnv is the environment of a box's init (commands get their own,
// wire.ExecSpec.Env). GOMAXPROCS=1: the init mostly waits (on its sockets,
// the commands' pipes, wait4), and a Go runtime started with one P instead
// of one per CPU keeps one span cache, one GC worker and fewer threads:
// about 200 KiB less of a running box's anonymous memory on a 2-CPU host
// (bench/box-init-running.sh, issue 26), with the same output throughput
// (300 MB through box exec: 2.0-2.4 s either way). It must be in the
// environment: the runtime sizes its Ps before main runs.
func initEnv() []string { return []string{"PATH=" + boxPath, "GOMAXPROCS=1"} }

// spawnInit starts the init in fresh namespaces (and a user namespace
// mapping the caller to root when userNS), with its output in logPath.
func (m *Manager) spawnInit(logPath string, userNS bool) (*spawnedInit, error) {
	hostCtrl, boxCtrl, err := socketPair(unix.SOCK_STREAM)
	if err != nil {
		return nil, err
	}
	hostConns, boxConns, err := socketPair(unix.SOCK_SEQPACKET)
	if err != nil {
		hostCtrl.Close()
		boxCtrl.Close()
		return nil, err
	}
	logf, _ := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	cmd := &exec.Cmd{
		Path: m.opts.InitBinary, Args: append([]string{m.opts.InitBinary}, m.opts.InitArgs...),
		Env: initEnv(), ExtraFiles: []*os.File{boxCtrl, boxConns},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID |
			unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWNET},
	}
	if logf != nil {
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	if userNS {
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		cmd.SysProcAttr.GidMappingsEnableSetgroups = false
	}
	t0 := time.Now()
	err = cmd.Start()
	spawn := time.Since(t0)
	boxCtrl.Close()
	boxConns.Close()
	if logf != nil {
		logf.Close()
	}
	if err != nil {
		hostCtrl.Close()
		hostConns.Close()
		return nil, fmt.Errorf("start init %s: %w", m.opts.InitBinary, err)
	}
	init := &spawnedInit{cmd: cmd, ctrl: hostCtrl, conns: hostConns, log: logPath, spawn: spawn, booted: make(chan struct{})}
	go init.readBooted()
	return init, nil
}

func sessEnv(s *egress.BoxSession) map[string]string {
	if s == nil {
		return nil
	}
	return s.Env
}

// newEgress creates the egress session of task (nil when egress is off).
func (m *Manager) newEgress(task string) (*egress.BoxSession, error) {
	if m.opts.NewEgress == nil {
		return nil, nil
	}
	s, err := m.opts.NewEgress(task)
	if err != nil {
		return nil, fmt.Errorf("box %s: egress session: %w", task, err)
	}
	return s, nil
}

// socketPair returns the host end (as a net.Conn) and the box end (a file
// to inherit) of a unix socket pair of type typ.
func socketPair(typ int) (net.Conn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("box: socketpair: %w", err)
	}
	hf := os.NewFile(uintptr(fds[0]), "box-host-"+strconv.Itoa(typ))
	c, err := net.FileConn(hf)
	hf.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c, os.NewFile(uintptr(fds[1]), "box-init-"+strconv.Itoa(typ)), nil
}
