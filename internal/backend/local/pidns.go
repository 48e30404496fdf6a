package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A guarded command runs as the user, so without more it may read
// /proc/<pid>/environ of every process of that user outside the guard:
// the shell that started hermes holds the provider keys (Landlock does not
// refuse it on the kernels tried; the issue 23 attacker trial read them).
// So, as root, the commands of one backend share a PID namespace of their
// own, with a fresh /proc on which only they appear:
//
//   - The namespace's PID 1 is a keeper: the hermes binary re-executed
//     with PIDInitArg (PIDInitMain), started once per backend with an
//     empty environment. It reaps the orphans of the namespace (a server
//     a command detached keeps running while hermes runs; Backend.Close
//     kills the keeper and the whole namespace with it) and, on
//     request over a socket, makes a proc instance of its namespace
//     (fsopen/fsmount: a detached mount) and sends its descriptor back.
//   - Each command's guard thread, in the mount namespace it already has
//     of its own, moves such a proc mount over /proc and enters the
//     keeper's PID namespace for its children (setns), then forks the
//     command as before. The command and its children see only the
//     namespace's processes in /proc; hermes, its parent shell and every
//     other process of the user are not there.
//
// Without CAP_SYS_ADMIN (hermes not run as root) neither mount nor PID
// namespaces are available to the guard; commands then see the host's
// /proc (the README and `hermes doctor` say so).

// PIDInitArg is the first argument that makes the hermes binary run
// PIDInitMain (hidden; cmd/hermes dispatches it).
const PIDInitArg = "__hermes-local-pid-init"

// pidKeeper is hermes's side of the keeper: its process, the socket it
// answers on and a descriptor of its PID namespace. A keeper that died
// (killed from outside) is started again for the next command.
type pidKeeper struct {
	exe string

	mu      sync.Mutex
	stopped bool
	cmd     *exec.Cmd
	sock    *os.File // hermes's end of the socketpair; nil = not running
	ns      int      // /proc/<keeper>/ns/pid; -1 when not running
}

func newPIDKeeper(exe string) *pidKeeper { return &pidKeeper{exe: exe, ns: -1} }

// startLocked starts the keeper unless it runs; k.mu is held.
func (k *pidKeeper) startLocked() error {
	if k.stopped {
		return errors.New("the backend is closed")
	}
	if k.sock != nil {
		return nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("PID namespace keeper: socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "keeper"), os.NewFile(uintptr(fds[1]), "hermes")
	defer theirs.Close()
	cmd := exec.Command(k.exe, PIDInitArg)
	cmd.Env = []string{} // it is visible to the commands: nothing of hermes's environment
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return fmt.Errorf("PID namespace keeper %s: %w", k.exe, err)
	}
	ns, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		ours.Close()
		return fmt.Errorf("PID namespace keeper: %w", err)
	}
	k.cmd, k.sock, k.ns = cmd, ours, ns
	return nil
}

// dropLocked forgets a running keeper (closing its socket lets it exit
// once its namespace is empty); k.mu is held.
func (k *pidKeeper) dropLocked() {
	if k.sock == nil {
		return
	}
	_ = k.sock.Close()
	_ = unix.Close(k.ns)
	cmd := k.cmd
	k.sock, k.cmd, k.ns = nil, nil, -1
	go func() { _ = cmd.Wait() }()
}

// procLocked asks the keeper (started first when it does not run) for a
// new detached proc mount of its namespace and returns its descriptor;
// k.mu is held.
func (k *pidKeeper) procLocked() (int, error) {
	if err := k.startLocked(); err != nil {
		return -1, err
	}
	if _, err := k.sock.Write([]byte{'p'}); err != nil {
		return -1, fmt.Errorf("PID namespace keeper: %w", err)
	}
	buf, oob := make([]byte, 256), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(k.sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("PID namespace keeper: %w", err)
	}
	if n == 0 && oobn == 0 {
		return -1, errors.New("PID namespace keeper: it exited")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err == nil && len(msgs) == 1 {
		if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
			return fds[0], nil
		}
	}
	return -1, fmt.Errorf("PID namespace keeper: no proc mount (%s)", buf[:n])
}

// enter runs on a guard thread that has a mount namespace of its own:
// it mounts a proc of the keeper's namespace over /proc and makes the
// thread's children members of that namespace. A keeper that stopped
// answering is replaced once.
func (k *pidKeeper) enter() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	fd, err := k.procLocked()
	if err != nil && !k.stopped {
		k.dropLocked()
		fd, err = k.procLocked()
	}
	if err != nil {
		return err
	}
	err = unix.MoveMount(fd, "", unix.AT_FDCWD, "/proc", unix.MOVE_MOUNT_F_EMPTY_PATH)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("mount the commands' /proc: %w", err)
	}
	if err := unix.Setns(k.ns, unix.CLONE_NEWPID); err != nil {
		return fmt.Errorf("enter the commands' PID namespace: %w", err)
	}
	return nil
}

// kill ends the keeper with SIGKILL, and with it (PID 1) every process
// of its namespace: what a command detached (`setsid nohup … &`) does not
// outlive hermes. It returns once the kernel has ended them all (PID 1's
// exit waits for the namespace's other processes).
func (k *pidKeeper) kill() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.sock == nil {
		return
	}
	cmd := k.cmd
	_ = k.sock.Close()
	_ = unix.Close(k.ns)
	k.sock, k.cmd, k.ns = nil, nil, -1
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// enterPIDNamespace runs on the guard's locked thread before the command
// is forked: a mount namespace of the thread's own (the protected paths'
// one, or a new private one), the keeper's /proc over /proc, and the
// keeper's PID namespace for the thread's children.
func (g *guard) enterPIDNamespace() error {
	if !g.protectMounts {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("the commands' PID namespace: mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("the commands' PID namespace: make mounts private: %w", err)
		}
	}
	return g.pids.enter()
}

// PIDInitMain is the keeper (see above), run as PID 1 of the commands'
// namespace with its socket on descriptor 3. It returns the exit code.
func PIDInitMain() int {
	sock := os.NewFile(3, "hermes")
	if sock == nil {
		return 2
	}
	children := make(chan os.Signal, 1)
	signal.Notify(children, unix.SIGCHLD)
	signal.Ignore(unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGQUIT, unix.SIGPIPE)
	hermesGone := make(chan struct{})
	go func() {
		defer close(hermesGone)
		buf := make([]byte, 16)
		for {
			n, err := sock.Read(buf)
			if err != nil || n == 0 {
				return
			}
			fd, why := newProcMount()
			rights := []byte(nil)
			if fd >= 0 {
				rights = unix.UnixRights(fd)
			}
			err = unix.Sendmsg(int(sock.Fd()), []byte(why), rights, nil, 0)
			if fd >= 0 {
				unix.Close(fd)
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-children:
		case <-hermesGone:
			hermesGone = nil
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.ECHILD) && hermesGone == nil {
				return 0 // hermes is gone and nothing runs here any more
			}
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// newProcMount makes a detached proc mount (nosuid, nodev, noexec) of the
// calling process's PID namespace; it returns -1 and why on failure.
func newProcMount() (int, string) {
	fs, err := unix.Fsopen("proc", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, "fsopen proc: " + err.Error()
	}
	defer unix.Close(fs)
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, "create proc: " + err.Error()
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, "fsmount proc: " + err.Error()
	}
	return fd, "ok"
}
