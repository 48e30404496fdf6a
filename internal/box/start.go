package box

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/egress"
)

// boxPath is PATH inside the box.
const boxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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
func (m *Manager) workspace() string {
	cwd := m.opts.Terminal.Cwd
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

// persistent reports terminal.container_persistent (default true).
func (m *Manager) persistent() bool {
	p := m.opts.Terminal.ContainerPersistent
	return p == nil || *p
}

// lockState takes the exclusive lock of a box state dir so that two
// hermes processes never run (or snapshot) the same box at once.
func lockState(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("box state %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("box %s is in use by another hermes process (lock %s): stop it first", filepath.Base(dir), f.Name())
	}
	return f, nil
}

// resolveBase returns the read-only lower layers for terminal.box_image
// (see ResolveImage: host "/", a built image, a rootfs dir or a tarball).
func (m *Manager) resolveBase() ([]string, error) {
	dir, err := ResolveImage(m.opts.Home, m.opts.Terminal.BoxImage)
	if err != nil {
		return nil, err
	}
	return []string{dir}, nil
}

// ensureDiskImage creates the sparse ext4 image of a persistent box's
// writable layer (size terminal.container_disk MiB) if it is missing.
func ensureDiskImage(path string, sizeMiB int) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return errors.New("box: persistent boxes keep their layer in an ext4 image and need mkfs.ext4: install e2fsprogs (apt-get install e2fsprogs), or set terminal.container_persistent: false")
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("box disk image: %w", err)
	}
	err = f.Truncate(int64(sizeMiB) << 20)
	f.Close()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("box disk image %s: %w", tmp, err)
	}
	out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", tmp).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("box: mkfs.ext4 %s: %v: %s", tmp, err, strings.TrimSpace(string(out)))
	}
	return os.Rename(tmp, path)
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

// baseEnv is the environment of every command: PATH, HOME, TERM, LANG,
// HERMES_SESSION_ID, the egress variables and Options.Env. Nothing of the
// agent's own environment (provider keys included) is passed.
func (m *Manager) baseEnv(task string, egressEnv map[string]string) []string {
	env := map[string]string{
		"PATH": boxPath, "HOME": "/root", "TERM": "xterm-256color", "LANG": "C.UTF-8",
		"HERMES_SESSION_ID": task,
	}
	for k, v := range egressEnv {
		env[k] = v
	}
	for k, v := range m.opts.Env {
		env[k] = v
	}
	return sortedEnv(env)
}

// startBox builds and starts the box of task.
func (m *Manager) startBox(ctx context.Context, task string) (b *Box, err error) {
	t := m.opts.Terminal
	dir := m.StateDir(task)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("box state dir: %w", err)
	}
	lock, err := lockState(dir)
	if err != nil {
		return nil, err
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
	lower, err := m.resolveBase()
	if err != nil {
		return nil, err
	}
	userNS := os.Geteuid() != 0
	spec := initSpec{
		Task: task, Lower: lower, LayerDir: filepath.Join(dir, "layer"), DiskMiB: t.ContainerDisk,
		Merged: filepath.Join(dir, "merged"), Workspace: m.workspace(),
		WorkspaceOverlay: t.BoxWorkspace == "overlay", Hide: m.hiddenPaths(), Hostname: Hostname,
		UserNS: userNS, Landlock: true,
	}
	for _, d := range []string{spec.LayerDir, spec.Merged} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("box state dir: %w", err)
		}
	}
	if m.persistent() && !userNS {
		spec.LayerImage = filepath.Join(dir, "disk.img")
		if err := ensureDiskImage(spec.LayerImage, t.ContainerDisk); err != nil {
			return nil, err
		}
		waitLoopReleased(spec.LayerImage, 3*time.Second)
	}
	cg, err := newCgroup(filepath.Join("hermes", task), Limits{
		MemoryBytes: int64(t.ContainerMemory) << 20, PIDs: t.BoxPids, CPUs: t.ContainerCPU,
	})
	if err != nil {
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	cleanups = append(cleanups, func() { cg.KillAll(); cg.Remove() })
	sess, err := m.newEgress(task)
	if err != nil {
		return nil, err
	}
	if sess != nil {
		cleanups = append(cleanups, func() { sess.Close() })
		spec.Egress = true
		spec.CACertPEM = sess.CACertPEM
	}
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
	logf, _ := os.OpenFile(filepath.Join(dir, "init.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	cmd := &exec.Cmd{
		Path: m.opts.Executable, Args: append([]string{m.opts.Executable}, m.opts.InitArgs...),
		Env: []string{"PATH=" + boxPath}, ExtraFiles: []*os.File{boxCtrl, boxConns},
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
	err = cmd.Start()
	boxCtrl.Close()
	boxConns.Close()
	if logf != nil {
		logf.Close()
	}
	if err != nil {
		hostCtrl.Close()
		hostConns.Close()
		return nil, fmt.Errorf("box %s: start init %s: %w", task, m.opts.Executable, err)
	}
	cleanups = append(cleanups, func() { cmd.Process.Kill(); cmd.Wait(); hostCtrl.Close(); hostConns.Close() })
	if err := cg.Add(cmd.Process.Pid); err != nil {
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	b = &Box{
		task: task, stateDir: dir, workdir: spec.Workspace, shell: "/bin/sh",
		env: m.baseEnv(task, sessEnv(sess)), spec: spec, persist: m.persistent(), initPID: cmd.Process.Pid,
		cmd: cmd, fc: newFrameConn(hostCtrl), conns: hostConns.(*net.UnixConn), cg: cg, egress: sess, lock: lock,
		ctx: bctx, cancel: cancel, died: make(chan struct{}), handlers: map[uint64]func(response){},
		dials: map[uint64]chan net.Conn{}, now: m.now, lastUsed: m.now(),
	}
	if err := b.fc.send(request{Op: opSetup, Setup: &spec}); err != nil {
		cancel()
		return nil, fmt.Errorf("box %s: send setup: %w", task, err)
	}
	ready := make(chan error, 1)
	go func() {
		var r response
		if err := b.fc.dec.Decode(&r); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "init.log"))
			ready <- fmt.Errorf("box init exited during setup: %v %s", err, strings.TrimSpace(string(log)))
			return
		}
		if r.Kind != kindReady {
			ready <- errors.New(r.Err)
			return
		}
		ready <- nil
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("no answer from the init within %s", startTimeout)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("box %s: %w", task, err)
	}
	go b.run()
	go b.runConns()
	if info, err := b.Stat(ctx, "/bin/bash"); err == nil && !info.IsDir {
		b.shell = "/bin/bash"
	}
	return b, nil
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
