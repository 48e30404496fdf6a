// Package wire is what a hermes box's host side (internal/box) and its
// init (internal/box/initproc, PID 1 inside the box) say to each other:
// the frames, their operations and kinds, and the socket conventions. It
// is versioned (Version) because another hermes process may attach to a
// box whose init another build started. It imports no other hermes
// package.
//
// The host and the box's init talk over two inherited sockets:
//
//   - fd 3 (ControlFD), the control socket (SOCK_STREAM): a stream of request frames
//     from the host and response frames from the init (Conn; encoded as
//     codec.go says). Every request carries
//     an id; responses name the id they answer, so many commands and file
//     operations run at the same time.
//   - fd 4 (ConnFD), the connection socket (SOCK_SEQPACKET): the init hands the host
//     TCP sockets that live in the box's network namespace, one per message,
//     with SCM_RIGHTS (unix(7)). The 8-byte payload is the request id of a
//     dial (port forwarding), or 0 for a connection accepted by the egress
//     relay on 127.0.0.1:egress.ProxyPort inside the box.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Request operations.
const (
	OpSetup      = "setup"
	OpExec       = "exec"
	OpStdin      = "stdin"
	OpCloseStdin = "closestdin"
	OpKill       = "kill"
	OpTerm       = "term" // SIGTERM to the command (the wrapper shell's children)
	OpReadFile   = "read"
	OpWriteFile  = "write"
	OpStat       = "stat"
	OpReadDir    = "readdir"
	OpDial       = "dial"
	OpAttach     = "attach" // first frame of an attached connection (internal/box/initproc/attach_linux.go)
	OpSignal     = "signal" // send Signal to a command's process group
	// OpDrain (owner only): the owner is stopping the box; the init takes
	// no new attached connection or command, reports the attached
	// commands still running (KindAttached), then answers ok.
	OpDrain = "drain"
	// OpChown (owner only): lchown(2) Path to Owner.
	OpChown  = "chown"
	OpResize = "resize" // set the window size of a command's terminal
	// OpJoined tells the init it runs in its box's cgroup (the host moved
	// it there); only then does it accept attached connections, so that
	// no command starts outside the group.
	OpJoined = "joined"
	// OpGrantSudo (owner only): the box's sudo (InitSpec.SudoUIDs) serves
	// Owner.UID too: the account of the image's User, resolved in the box
	// after it started. A box without sudo answers ok and grants nothing.
	OpGrantSudo = "grantsudo"
)

// Response kinds.
const (
	KindReady   = "ready"
	KindStarted = "started"
	KindOutput  = "out"
	KindExit    = "exit"
	KindOK      = "ok"
	KindError   = "error"
	// KindStdinAck acknowledges one stdin frame of a command: the init
	// wrote it to the command's stdin (or dropped it, the command having
	// closed its stdin), so the sender may send one more (StdinWindow).
	KindStdinAck = "stdinack"
	// KindAttached (id 0, to the owner): the number of commands attached
	// processes run (in PID), sent when it changes or an attached process
	// uses the box, so the owner counts it as use (its idle timer) and
	// can wait for them before stopping the box (Box.WaitAttached).
	KindAttached = "attached"
)

// StdinWindow is how many stdin frames of one command a sender may have
// sent and not yet seen acknowledged (KindStdinAck). The init queues that
// many per command (and the close frame), so the request loop never waits
// on a command that reads slowly, and no stdin byte is dropped.
const StdinWindow = 64

// Version is the version of the frames on an attach connection.
// An attaching process sends it in its hello (request.Version) and the
// init answers with its own (AttachInfo.Protocol); a mismatch is refused
// with a message, never half-spoken. Version 1 added stdin flow control
// (KindStdinAck), WriteFile in parts (request.Offset, More) and frames of
// at most MaxAttachFrame; inits before it send no version (0). Version 2
// encodes frames in the protocol buffers wire format (codec.go) instead
// of encoding/gob; its inits listen on AttachSocketName, a name inits of
// versions 0 and 1 did not use (LegacyAttachSocketName), so that neither
// side reads the other's encoding.
const Version = 2

// Error kinds carried in responses, mapped back to fs errors on the host.
const (
	ErrKindNotExist   = "notexist"
	ErrKindPermission = "permission"
	ErrKindExist      = "exist"
)

// request is one host→init frame.
type Request struct {
	ID    uint64
	Op    string
	Setup *InitSpec
	Exec  *ExecSpec
	Path  string
	Data  []byte
	Perm  uint32
	Port  int
	// Signal is the signal number of OpSignal (attachSignals lists those
	// accepted).
	Signal int
	// Rows and Cols are the window size of OpResize.
	Rows, Cols uint16
	// Version is the attach protocol of an OpAttach hello (Version).
	Version int
	// Offset and More split an OpWriteFile's data into parts on an
	// attached connection (AttachWriteChunk): Data goes at Offset, and
	// More is set on every part but the last.
	Offset int64
	More   bool
	// Owner is the new owner of Path for OpChown.
	Owner *Account
}

// Account is a numeric user and group id in the box.
type Account struct {
	UID, GID uint32
}

// ExecSpec is a command to run inside the box.
type ExecSpec struct {
	Argv    []string
	Dir     string
	Env     []string
	Timeout time.Duration // 0 = none; on expiry the init kills the command's tree
	Stdin   bool          // stdin frames follow; false = /dev/null
	// Search: Argv[0] without a slash is looked up in the PATH of Env
	// inside the box (execvp(3) style), so a command runs without a shell.
	Search bool
	// Stderr: standard error gets a pipe of its own, sent in output frames
	// with Stream 2; otherwise it shares standard output's.
	Stderr bool
	// TTY runs the command on a new pseudo-terminal of the box (its
	// controlling terminal; stdin, stdout and stderr all on it), of
	// Rows×Cols; stdin frames are typed on it, so ^C reaches the
	// foreground job as SIGINT.
	TTY        bool
	Rows, Cols uint16
	// RunAs: the command runs as this uid and gid (no supplementary
	// groups) instead of root; nil = root. The init must have been set up
	// with InitSpec.SwitchUsers.
	RunAs *Account
}

// ExitInfo is how a command ended.
type ExitInfo struct {
	Code     int    // exit status, -1 when killed by a signal
	Signal   string // "SIGKILL"... or ""
	TimedOut bool
}

// FileInfo is backend.FileInfo on the wire.
type FileInfo struct {
	Name    string
	Size    int64
	Mode    uint32
	ModTime time.Time
	IsDir   bool
}

// response is one init→host frame.
type Response struct {
	ID      uint64
	Kind    string
	Data    []byte
	PID     int
	Exit    ExitInfo
	Err     string
	ErrKind string
	Info    *FileInfo
	Infos   []FileInfo
	Phases  *InitPhases // with KindReady: how long the init's setup took
	Shell   string      // with KindReady: the box's shell, /bin/bash or /bin/sh
	Stream  int         // with KindOutput: 2 = standard error of an ExecSpec.Stderr command, else 1
	Attach  *AttachInfo // with KindReady on an attached connection
}

// AttachInfo describes a running box to a process that attached to it.
type AttachInfo struct {
	Task    string
	Env     []string // the base environment of commands (InitSpec.Env)
	Workdir string
	Cgroup  string // the box's cgroup, below the hierarchies' roots (InitSpec.Cgroup)
	// Protocol is the init's Version (0 from inits before it).
	Protocol int
	// BindWorkspace: Workdir is the host workspace bound into the box
	// (not InitSpec.WorkspaceOverlay), which an attaching hermes checks
	// after its commands (protect.Watch); false from inits before it.
	BindWorkspace bool
}

// InitPhases are the durations of the init's own start phases.
type InitPhases struct {
	Root     time.Duration // mounts and pivot_root
	Restrict time.Duration // Landlock, capabilities, seccomp
}

// InitSpec tells the init how to build the box (the first frame, OpSetup).
type InitSpec struct {
	Task string
	// SwitchUsers: the init keeps CAP_SETUID, CAP_SETGID, CAP_CHOWN and
	// CAP_KILL (box.Options.SwitchUsers) for ExecSpec.RunAs and OpChown.
	SwitchUsers bool
	Lower       []string // read-only base layers, topmost first
	LayerDir    string   // host path where the writable layer filesystem is mounted
	// LayerImage is an ext4 image holding the writable layer (persistent
	// boxes); "" = a tmpfs of DiskMiB (the layer vanishes with the box).
	LayerImage string
	// LayerMounted: the host mounted LayerImage itself and passes the
	// detached mount on the connection socket before this frame
	// (internal/box/layer_mount_linux.go); the init moves it to LayerDir.
	LayerMounted     bool
	DiskMiB          int
	TmpMiB           int    // size of the box's /tmp and /var/tmp tmpfs (see tmpSizeMiB)
	Merged           string // host path of the overlay mount point
	Workspace        string // absolute path, the same inside and outside
	WorkspaceOverlay bool   // copy-on-write workspace instead of a bind mount
	// Protected are terminal.protected_paths: read-only in a bind
	// workspace (protect.Set.MountReadOnly).
	Protected []string
	Empty     []string // host dirs shown empty (opaque in the upper layer), before the workspace mount
	Hide      []string // host paths covered (tmpfs or /dev/null), after the workspace mount
	// HermesExe is the host path of the running hermes binary (links
	// resolved); the init binds it read-only, nosuid, nodev at
	// HermesBinDir/NAME for each of HermesNames ("hermes", and the
	// hermes-agent/hermes-acp links installed beside it), unless the box
	// root already has a non-empty file there. "" = none.
	HermesExe   string
	HermesNames []string
	Hostname    string
	CACertPEM   []byte
	// EgressPort: the init listens on 127.0.0.1:EgressPort inside the box
	// (egress.ProxyPort) and hands each connection to the host on the
	// connection socket (id 0); 0 = no egress relay.
	EgressPort int
	UserNS     bool
	Landlock   bool
	// AttachSocket is the host path of the box's attach socket, which the
	// init listens on for other hermes processes of the box's owner
	// (internal/box/attach_linux.go); "" = none.
	AttachSocket string
	// AttachIdle is the idle timeout of attached connections (0 =
	// AttachIdleTimeout).
	AttachIdle time.Duration
	// Env is the base environment of commands and Cgroup the box's
	// cgroup (cgroup.Name), both handed to attached processes.
	Env    []string
	Cgroup string
	// SudoUIDs are the uids whose processes in the box may run commands
	// as the box's root with `sudo` (E2B's passwordless sudo for `user`,
	// internal/box/initproc/sudo_linux.go); root may too. Empty = no sudo.
	// Only with SwitchUsers (a uid in the box is the uid on the host).
	SudoUIDs []uint32
	// SudoPathDirs (with SudoUIDs) are the directories of the PATH of the
	// box's image when it lacks SudoPath's directory (an image with
	// PATH=/bin): the init binds sudo in the first of them that exists
	// and has no `sudo`, too, so `sudo` is found on the image's PATH.
	SudoPathDirs []string
}

// ErrorResponse turns err into an error frame for request id.
func ErrorResponse(id uint64, err error) Response {
	r := Response{ID: id, Kind: KindError, Err: err.Error()}
	switch {
	case errors.Is(err, ErrDraining):
		r.ErrKind = ErrKindDraining
	case errors.Is(err, fs.ErrNotExist):
		r.ErrKind = ErrKindNotExist
	case errors.Is(err, fs.ErrPermission):
		r.ErrKind = ErrKindPermission
	case errors.Is(err, fs.ErrExist):
		r.ErrKind = ErrKindExist
	}
	return r
}

// SendConn passes the socket of c over the connection socket with
// SCM_RIGHTS, tagged with id, then closes c.
func SendConn(sock *net.UnixConn, mu *sync.Mutex, id uint64, c net.Conn) error {
	defer c.Close()
	sc, ok := c.(interface{ File() (*os.File, error) })
	if !ok {
		return fmt.Errorf("connection %T has no file", c)
	}
	f, err := sc.File()
	if err != nil {
		return err
	}
	defer f.Close()
	var tag [8]byte
	binary.BigEndian.PutUint64(tag[:], id)
	mu.Lock()
	defer mu.Unlock()
	_, _, err = sock.WriteMsgUnix(tag[:], unix.UnixRights(int(f.Fd())), nil)
	return err
}

// ReceiveConn receives one passed socket and its id.
func ReceiveConn(sock *net.UnixConn) (uint64, net.Conn, error) {
	var tag [8]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := sock.ReadMsgUnix(tag[:], oob)
	if err != nil {
		return 0, nil, err
	}
	if n == 0 && oobn == 0 {
		return 0, nil, io.EOF
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return 0, nil, fmt.Errorf("bad connection message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return 0, nil, fmt.Errorf("bad connection rights: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "box-conn")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint64(tag[:]), c, nil
}

// MaxAttachFrame bounds one frame from an attached process: stdin parts
// (stdinChunk), signals, resizes, file operations with at most
// AttachWriteChunk of data, and commands, whose argv and environment the
// kernel bounds to 2 MiB anyway (ARG_MAX with the default stack limit).
const MaxAttachFrame = 2 << 20

// AttachWriteChunk is the largest part of a WriteFile's data in one frame
// of an attached connection (request.Offset and More).
const AttachWriteChunk = 1 << 20

// AttachIdleTimeout closes an attached connection that has no command
// running and sends nothing for that long.
const AttachIdleTimeout = time.Minute

// AttachHelloTimeout bounds the wait for a connection's first frame.
const AttachHelloTimeout = 5 * time.Second

// AttachSocketName is the attach socket's file name in the box state dir.
const AttachSocketName = "attach-v2.sock"

// LegacyAttachSocketName is where inits of protocol versions 0 and 1
// (encoding/gob frames) listen: a box that has one was started by an older
// hermes.
const LegacyAttachSocketName = "attach.sock"

// HermesBinDir is where every box finds the hermes binary
// (InitSpec.HermesExe); it is on the box's PATH. Hermes Agent's own
// images install under /opt/hermes too.
const HermesBinDir = "/opt/hermes/bin"

// SudoPath is where a box with InitSpec.SudoUIDs finds `sudo`: the hermes
// binary (InitSpec.HermesExe) bound read-only, which runs as the sudo
// client by that name. It comes before /usr/bin on every usual PATH.
const SudoPath = "/usr/local/bin/sudo"

// SudoSocket is the abstract unix socket (SOCK_SEQPACKET) in the box's
// network namespace on which the init serves sudo requests; only
// processes of the box can reach it.
const SudoSocket = "@hermes-box-sudo"

// ErrDraining refuses attached connections and commands once the owner is
// stopping the box.
var ErrDraining = errors.New("the box is stopping (the hermes process that runs it has ended): run the command again to start it afresh")

// ErrKindDraining marks the refusal of an attach by a box that is
// stopping: the attaching process may start the box afresh once it has.
const ErrKindDraining = "draining"

// InitArg is the hidden first argument that makes the hermes binary run as
// a box's init (cmd/hermes dispatches it to InitMain before the CLI).
const InitArg = "box-init"

// Inherited descriptors of the init (see the package doc).
const (
	ControlFD = 3
	ConnFD    = 4
)

// BootedByte is what an init writes on its control socket once its
// runtime and package init are done, before it reads the setup frame:
// the frame protocol it speaks ('0'+Version), so that a hermes-box-init of
// another build is named before a frame is misread. Inits of versions 0
// and 1 wrote LegacyBootedByte.
const BootedByte = '0' + Version

// LegacyBootedByte is the boot byte of inits of protocol versions 0 and 1
// (encoding/gob frames).
const LegacyBootedByte = 'B'

// ProtocolArg is the argument with which hermes-box-init prints the frame
// protocol it speaks (Version) and exits: hermes doctor asks it so.
// Inits of versions 0 and 1 refuse it (exit status 2).
const ProtocolArg = "protocol"

// MaxAttached bounds the attached connections open at once.
const MaxAttached = 64
