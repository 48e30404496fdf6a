// Package initproc is everything of a hermes box that runs as its PID 1 or
// inside it: the init (InitMain) that builds the box's root, restricts
// itself (Landlock, capabilities, seccomp) and serves the host's requests
// (wire frames), and the attach socket other hermes processes of the box's
// owner use. cmd/hermes-box-init and `hermes box-init` both run InitMain.
// It imports no provider SDK, configuration, egress or archive package
// (cmd/hermes-box-init's deps test keeps it so); the host side is
// internal/box.
package initproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/protect"
	"golang.org/x/sys/unix"
)

// InitMain is the entry point of a box's PID 1. It is started by the
// box.Manager in fresh mount, pid, uts, ipc and net namespaces, with the
// control socket on fd 3 and the connection socket on fd 4. It reads the
// setup frame, builds the box's root (overlay, /proc, /dev, tmpfs, the
// workspace, hidden paths), pivots into it, drops every privilege it can
// (Landlock, capabilities, seccomp with no_new_privs) and then serves
// requests until the host closes the control socket. It returns the
// process exit code.
func InitMain() int {
	// On another thread while this one boots and waits for the setup
	// frame: the seccomp program.
	filter := make(chan seccompFilter, 1)
	go func() { filter <- buildSeccomp() }()
	threads := make(chan struct{})
	go func() {
		prewarmThreads(initSpareThreads)
		close(threads)
	}()
	ctrlFile := os.NewFile(wire.ControlFD, "box-control")
	connFile := os.NewFile(wire.ConnFD, "box-conns")
	if ctrlFile == nil || connFile == nil {
		fmt.Fprintln(os.Stderr, "hermes box-init: must be started by hermes (missing control sockets)")
		return 2
	}
	ctrl, err := net.FileConn(ctrlFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hermes box-init: control socket:", err)
		return 2
	}
	cc, err := net.FileConn(connFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hermes box-init: connection socket:", err)
		return 2
	}
	ctrlFile.Close()
	connFile.Close()
	conns, ok := cc.(*net.UnixConn)
	if !ok {
		fmt.Fprintln(os.Stderr, "hermes box-init: connection socket is not a unix socket")
		return 2
	}
	// Commands are forked only by the request loop, which stays on this
	// thread; its bounding set is emptied here, without a psx broadcast
	// (restrict_linux.go).
	runtime.LockOSThread()
	if err := dropBoundingSet(); err != nil {
		fmt.Fprintln(os.Stderr, "hermes box-init:", err)
		return 1
	}
	// Tell the host this init has booted: a prestarted one is then
	// known to be ready for a box (spawnedInit.booted).
	if _, err := ctrl.Write([]byte{wire.BootedByte}); err != nil {
		fmt.Fprintln(os.Stderr, "hermes box-init: control socket:", err)
		return 2
	}
	fc := wire.NewConn(ctrl)
	var req wire.Request
	if err := fc.Receive(&req); err != nil || req.Op != wire.OpSetup || req.Setup == nil {
		fmt.Fprintln(os.Stderr, "hermes box-init: no setup frame:", err)
		return 2
	}
	spec := req.Setup
	began := time.Now()
	var attachLn *net.UnixListener
	if spec.AttachSocket != "" {
		// Before the pivot: the state dir is out of the box's sight.
		if attachLn, err = listenAttach(spec.AttachSocket); err != nil {
			fmt.Fprintln(os.Stderr, "hermes box-init: other hermes processes cannot attach:", err)
		}
	}
	if err := setupRoot(spec, conns); err != nil {
		fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: err.Error()})
		return 1
	}
	rooted := time.Now()
	srv, err := newInitServer(fc, conns, spec)
	if err != nil {
		fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: err.Error()})
		return 1
	}
	if spec.EgressPort != 0 {
		if err := srv.listenEgress(spec.EgressPort); err != nil {
			fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: "egress relay: " + err.Error()})
			return 1
		}
	}
	if err := restrictSelf(spec, <-filter); err != nil {
		fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: err.Error()})
		return 1
	}
	if len(spec.SudoUIDs) > 0 {
		// After restrictSelf (commands share the init's Landlock domain),
		// before any command runs (none can take the name first).
		if err := srv.listenSudo(); err != nil {
			fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: err.Error()})
			return 1
		}
	}
	if err := protectInit(); err != nil {
		fc.Send(wire.Response{ID: req.ID, Kind: wire.KindError, Err: err.Error()})
		return 1
	}
	phases := &wire.InitPhases{Root: rooted.Sub(began), Restrict: time.Since(rooted)}
	if err := fc.Send(wire.Response{ID: req.ID, Kind: wire.KindReady, PID: os.Getpid(), Phases: phases, Shell: srv.shell()}); err != nil {
		return 1
	}
	srv.attachLn = attachLn // served from the host's wire.OpJoined on
	// The setup's garbage (the spec, the seccomp program's builder) is
	// returned to the kernel soon, off the request loop's thread: an idle
	// box's init then holds only what it uses.
	time.AfterFunc(initFreeDelay, debug.FreeOSMemory)
	<-threads
	srv.serve()
	return 0
}

// protectInit shields PID 1 from the box's own processes, which all run as
// the same user (root, without capabilities):
//
//   - it makes the init non-dumpable (prctl(2) PR_SET_DUMPABLE 0), so that
//     /proc/1/mem, maps, environ and fd, ptrace(2), process_vm_readv(2) and
//     pidfd_getfd(2) on it need CAP_SYS_PTRACE, which no box process has
//     (ptrace(2) "Ptrace access mode checking"). The flag is the init's
//     own: commands are reset to dumpable by execve(2);
//   - it takes the signals that would end it (initCaughtSignals) into a
//     channel that is drained (os/signal Notify), so a signal sent from
//     inside the box (kill -SEGV 1, kill -TERM 1) is received by the Go
//     runtime and dropped instead of ending the process; a real fault of
//     the init still crashes it. A PID 1 only gets the signals it has a handler for from
//     its own pid namespace (pid_namespaces(7)), and SIGKILL and SIGSTOP
//     never. The handlers are reset to the default in forked children
//     (the Go runtime does so before execve), so commands are unaffected.
func protectInit() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the init non-dumpable: %w", err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, initCaughtSignals...)
	go func() {
		for range sigs {
		}
	}()
	return nil
}

// initCaughtSignals are the signals whose default handling by the Go
// runtime ends the process (terminate, throw or panic). Catching every
// signal instead costs about 4 ms at each box start.
var initCaughtSignals = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
	unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGUSR1, unix.SIGUSR2, unix.SIGPIPE, unix.SIGALRM, unix.SIGTERM,
	unix.SIGSTKFLT, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM, unix.SIGSYS, unix.SIGPWR}

// initSpareThreads is how many idle OS threads the init keeps for the Go
// runtime. Under the box's pids limit a fork bomb takes every free task
// slot; a Go runtime that then fails to create a thread aborts, and the
// box would die with its init. With idle threads ready, the runtime
// reuses them (it never exits idle threads) and needs no new one.
// TestEscapeForkBomb has the host read, write and run 8 things at once
// while a bomb holds every slot: with the init's one P (box.initEnv) 4
// spares lost the init in 2 runs of 3, 8 in none of 6.
const initSpareThreads = 8

// initFreeDelay is how long after the box is ready the init returns its
// setup's garbage to the kernel (debug.FreeOSMemory: a full collection):
// done at once, it ran beside the box's first command and slowed it by
// 2-3 ms on a 2-core machine.
const initFreeDelay = 300 * time.Millisecond

// prewarmThreads makes the Go runtime start n OS threads now: n goroutines
// each lock a thread and wait until all run at once, then unlock and end,
// leaving their threads idle in the runtime's pool.
func prewarmThreads(n int) {
	var running, release, done sync.WaitGroup
	running.Add(n)
	release.Add(1)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			running.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	running.Wait()
	release.Done()
	done.Wait()
}

// setupRoot builds the box's filesystem in the init's own mount namespace
// and pivots into it. Every mount lives only in that namespace, so the
// kernel removes them all when the box's last process exits. conns is the
// connection socket, on which the host passes a pre-mounted layer.
func setupRoot(s *wire.InitSpec, conns *net.UnixConn) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := mountLayer(s, conns); err != nil {
		return err
	}
	for _, d := range []string{"upper", "work", "ws-upper", "ws-work"} {
		if err := os.MkdirAll(filepath.Join(s.LayerDir, d), 0o755); err != nil {
			return fmt.Errorf("writable layer: %w", err)
		}
	}
	if err := EmptyAllInUpper(s.LayerDir, s.Empty, s.UserNS, s.LayerImage != ""); err != nil {
		return err
	}
	dirs, closeDirs, err := overlayDirs(append([]string{filepath.Join(s.LayerDir, "upper"), filepath.Join(s.LayerDir, "work")}, s.Lower...))
	if err != nil {
		return err
	}
	defer closeDirs()
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,%s", strings.Join(dirs[2:], ":"), dirs[0], dirs[1], overlaySafeOptions)
	if s.UserNS {
		opts += ",userxattr"
	}
	if err := unix.Mount("overlay", s.Merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay root at %s (%s): %w; the kernel needs overlayfs (CONFIG_OVERLAY_FS)", s.Merged, opts, err)
	}
	root, err := openBoxRoot(s.Merged)
	if err != nil {
		return err
	}
	defer root.close()
	if err := mountProc(root); err != nil {
		return err
	}
	if err := mountDev(root); err != nil {
		return err
	}
	// /tmp and /var/tmp are in memory and charged to the box's memory
	// limit: /var/tmp gets half of /tmp's size (tmpSizeMiB).
	for _, m := range []struct{ dir, opts string }{
		{"tmp", fmt.Sprintf("mode=1777,size=%dm", max(s.TmpMiB, 1))}, {"run", "mode=755,size=64m"},
		{"var/tmp", fmt.Sprintf("mode=1777,size=%dm", max(s.TmpMiB/2, 1))},
	} {
		if err := root.mount(m.dir, "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.opts); err != nil {
			return err
		}
	}
	if s.Workspace != "" {
		if err := mountWorkspace(root, s); err != nil {
			return err
		}
	}
	for _, h := range s.Hide {
		if err := hidePath(root, h); err != nil {
			return err
		}
	}
	if err := bindHermes(root, s); err != nil {
		return err
	}
	if err := bindSudo(root, s); err != nil {
		return err
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	if len(s.CACertPEM) > 0 {
		if err := installCA(root, s.CACertPEM); err != nil {
			return err
		}
	}
	if err := os.Chdir(s.Merged); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into %s: %w", s.Merged, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	return nil
}

// mountLayer mounts the writable layer: an ext4 image through a loop
// device that detaches itself on unmount (persistent boxes; the host may
// have mounted it already, see layerMount), or a tmpfs of DiskMiB. Either
// way the size is the box's disk limit.
func mountLayer(s *wire.InitSpec, conns *net.UnixConn) error {
	if s.LayerMounted {
		return receiveLayerMount(conns, s.LayerDir)
	}
	if s.LayerImage == "" {
		opts := fmt.Sprintf("mode=755,size=%dm", max(s.DiskMiB, 1))
		if err := unix.Mount("tmpfs", s.LayerDir, "tmpfs", 0, opts); err != nil {
			return fmt.Errorf("mount tmpfs writable layer at %s: %w", s.LayerDir, err)
		}
		return nil
	}
	dev, lf, err := AttachLoop(s.LayerImage)
	if err != nil {
		return err
	}
	defer lf.Close() // after the mount: an autoclear device detaches on its last close
	if err := unix.Mount(dev, s.LayerDir, "ext4", unix.MS_NOATIME, ""); err != nil {
		return fmt.Errorf("mount %s (%s) at %s: %w", s.LayerImage, dev, s.LayerDir, err)
	}
	return nil
}

// AttachLoop binds image to a free loop device with LO_FLAGS_AUTOCLEAR
// (loop(4)) and returns the device path and an open handle on it, which the
// caller closes once the device is mounted.
func AttachLoop(image string) (string, *os.File, error) {
	img, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open disk image: %w", err)
	}
	defer img.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open /dev/loop-control: %w (persistent boxes need loop devices; set terminal.container_persistent: false to use a tmpfs layer)", err)
	}
	defer ctl.Close()
	for range 20 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", nil, fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", nil, fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
		if errors.Is(err, unix.EBUSY) {
			lf.Close()
			continue // another process took it first
		}
		if err != nil {
			lf.Close()
			return "", nil, fmt.Errorf("configure %s: %w", dev, err)
		}
		return dev, lf, nil
	}
	return "", nil, errors.New("no free loop device after 20 attempts")
}

// mountProc mounts a fresh /proc (it shows only the box's pid namespace)
// and makes the kernel-tuning parts of it read-only.
func mountProc(root *boxRoot) error {
	if err := root.mount("proc", "proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	proc, err := root.realDir("proc") // now the new proc mount's root
	if err != nil {
		return err
	}
	defer unix.Close(proc)
	for _, p := range []string{"sys", "sysrq-trigger", "irq", "bus", "fs"} {
		// A fresh procfs instance: nothing in it is the box's doing.
		target := FDPath(proc) + "/" + p
		if _, err := os.Lstat(target); err != nil {
			continue
		}
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind /proc/%s: %w", p, err)
		}
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("make /proc/%s read-only: %w", p, err)
		}
	}
	return nil
}

// mountDev builds a minimal /dev: a tmpfs with the host's null, zero,
// full, random, urandom and tty nodes bound in, a private devpts, /dev/shm
// and the usual symlinks.
func mountDev(root *boxRoot) error {
	if err := root.mount("dev", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=1m"); err != nil {
		return err
	}
	devfd, err := root.realDir("dev") // the new, empty tmpfs
	if err != nil {
		return err
	}
	defer unix.Close(devfd)
	dev := FDPath(devfd)
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		target := dev + "/" + n
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("create /dev/%s: %w", n, err)
		}
		f.Close()
		if err := unix.Mount("/dev/"+n, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	if err := root.mount("dev/pts", "devpts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := root.mount("dev/shm", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return err
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := unix.Symlinkat(target, devfd, name); err != nil {
			return fmt.Errorf("link /dev/%s: %w", name, err)
		}
	}
	return nil
}

// mountWorkspace puts the workspace at the same path inside the box:
// bind-mounted read-write, or as its own overlay whose upper layer lives
// in the box's writable layer (the host tree stays untouched). The mount
// point is made a real directory of the box (realDir).
func mountWorkspace(root *boxRoot, s *wire.InitSpec) error {
	target, err := root.realDir(s.Workspace)
	if err != nil {
		return fmt.Errorf("create workspace %s in the box: %w", s.Workspace, err)
	}
	defer unix.Close(target)
	if s.WorkspaceOverlay {
		dirs, closeDirs, err := overlayDirs([]string{filepath.Join(s.LayerDir, "ws-upper"), filepath.Join(s.LayerDir, "ws-work")})
		if err != nil {
			return err
		}
		defer closeDirs()
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,%s", s.Workspace, dirs[0], dirs[1], overlaySafeOptions)
		if s.UserNS {
			opts += ",userxattr"
		}
		if err := unix.Mount("overlay", FDPath(target), "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount workspace overlay for %s: %w", s.Workspace, err)
		}
		return nil
	}
	if err := unix.Mount(s.Workspace, FDPath(target), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind workspace %s: %w", s.Workspace, err)
	}
	// target is the directory under the new mount; look the path up
	// again to reach the mount itself.
	mounted, err := root.resolve(s.Workspace)
	if err != nil {
		return fmt.Errorf("find workspace mount %s: %w", s.Workspace, err)
	}
	defer unix.Close(mounted)
	if err := noSuidNoDev(mounted); err != nil {
		return err
	}
	return protectWorkspace(root, s)
}

// protectWorkspace makes terminal.protected_paths read-only in the bind
// workspace (issue 23): the host runs what .git/config and .git/hooks/
// say on the user's next `git status`, so the box must not write them.
// Each existing entry gets a read-only bind over itself and the
// directories on the way to it become mount points, which cannot be
// renamed away (protect.Set.MountReadOnly); .git/hooks/ and .git/info/
// missing in an existing repository are created empty first. The mounts
// are made here, before the init drops its capabilities: nothing in the
// box can undo them.
//
// An entry missing when the box starts whose place is not inside an
// existing directory of the list (.git itself, when the workspace is not
// yet a repository; .vscode/) cannot carry a mount: the kernel offers no
// way to forbid one name in a writable directory without putting
// something in its place on the host. Those stay writable from the box;
// the next box started on the workspace protects them.
func protectWorkspace(root *boxRoot, s *wire.InitSpec) error {
	set := protect.New(s.Protected)
	if set.Empty() {
		return nil
	}
	reopen := func() (int, error) { return root.resolve(s.Workspace) }
	if _, err := set.MountReadOnly(reopen); err != nil {
		return fmt.Errorf("terminal.protected_paths in workspace %s: %w", s.Workspace, err)
	}
	return nil
}

// overlayDirs opens each of paths (O_PATH) and returns them as
// /proc/self/fd/N names for overlay mount options, which the kernel shows
// as given in the box's /proc/self/mountinfo: the host paths of the layer
// (under HERMES_HOME, often naming the user) stay out of the box. The
// returned func closes the descriptors once the mount is made.
func overlayDirs(paths []string) ([]string, func(), error) {
	var fds []int
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("open overlay directory %s: %w", p, err)
		}
		fds = append(fds, fd)
		names[i] = FDPath(fd)
	}
	return names, closeAll, nil
}

// overlaySafeOptions are added to every overlay mount of the box: the
// kernel neither creates nor follows redirect xattrs (a redirect planted
// in a restored layer could point a directory at a lower path the box
// hides, such as /root under host mode) and never uses metacopy (a
// metacopy file would show the data of another lower file).
const overlaySafeOptions = "redirect_dir=nofollow,metacopy=off"

// noSuidNoDev makes the bind mount fd is the root of (and every mount below it)
// nosuid and nodev without clearing its other flags (mount_setattr(2);
// kernels before 5.12 get a bind remount that keeps the read-only,
// noexec and atime flags statfs reports).
func noSuidNoDev(fd int) error {
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr)
	if err != unix.ENOSYS {
		if err != nil {
			return fmt.Errorf("make workspace mount nosuid,nodev: %w", err)
		}
		return nil
	}
	target := FDPath(fd)
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return fmt.Errorf("statfs workspace: %w", err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	for st1, ms := range map[int64]uintptr{unix.ST_RDONLY: unix.MS_RDONLY, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME} {
		if st.Flags&st1 != 0 {
			flags |= ms
		}
	}
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("remount workspace nosuid,nodev: %w", err)
	}
	return nil
}

// hidePath covers path p with an empty read-only tmpfs (directories) or
// /dev/null (files), when it is visible in the box. p is resolved as the
// box will resolve it (boxRoot.resolve).
func hidePath(root *boxRoot, p string) error {
	fd, err := root.resolve(p)
	if err != nil {
		return nil // not visible in the box
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("hide %s: %w", p, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil // a symlink's target is hidden on its own
	case unix.S_IFDIR:
		if err := unix.Mount("tmpfs", FDPath(fd), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0"); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		return nil
	}
	if err := unix.Mount("/dev/null", FDPath(fd), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("hide %s: %w", p, err)
	}
	return nil
}

// installCA writes the egress CA to egress.CACertPath and appends it to the
// box's CA bundle (once: a persistent layer keeps it). Both paths are
// resolved inside the box's own overlay (boxRoot.writeFile), never through
// a symlink the box planted towards the host.
func installCA(root *boxRoot, pem []byte) error {
	if err := root.writeFile("etc/hermes/box-ca.crt", pem, 0o644); err != nil {
		return fmt.Errorf("install box CA: %w", err)
	}
	const bundle = "etc/ssl/certs/ca-certificates.crt"
	old := root.readFile(bundle, len(caMarker)+len(pem)+1)
	if i := bytes.Index(old, []byte(caMarker)); i >= 0 {
		old = old[:i] // the CA of an earlier run of this persistent box
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		old = append(old, '\n')
	}
	data := append(append(old, caMarker...), pem...)
	if err := root.writeFile(bundle, data, 0o644); err != nil {
		return fmt.Errorf("append box CA to /%s: %w", bundle, err)
	}
	return nil
}

// caMarker precedes the box CA in the box's CA bundle.
const caMarker = "# hermes box egress CA\n"

// loopbackUp brings up "lo", the only interface of the box's network
// namespace (netdevice(7) SIOCSIFFLAGS).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	return nil
}

// receiveLayerMount, in the init, takes the mount the host passed and
// moves it to dir.
func receiveLayerMount(sock *net.UnixConn, dir string) error {
	var tag [8]byte
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := sock.ReadMsgUnix(tag[:], oob)
	if err != nil {
		return fmt.Errorf("receive the layer mount: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return errors.New("receive the layer mount: no descriptor passed")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return errors.New("receive the layer mount: no descriptor passed")
	}
	defer unix.Close(fds[0])
	if err := unix.MoveMount(fds[0], "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move the layer mount to %s: %w", dir, err)
	}
	return nil
}
