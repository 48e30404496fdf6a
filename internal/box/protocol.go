package box

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend"
)

// The host and the box's init talk over two inherited sockets:
//
//   - fd 3, the control socket (SOCK_STREAM): a gob stream of request frames
//     from the host and response frames from the init. Every request carries
//     an id; responses name the id they answer, so many commands and file
//     operations run at the same time.
//   - fd 4, the connection socket (SOCK_SEQPACKET): the init hands the host
//     TCP sockets that live in the box's network namespace, one per message,
//     with SCM_RIGHTS (unix(7)). The 8-byte payload is the request id of a
//     dial (port forwarding), or 0 for a connection accepted by the egress
//     relay on 127.0.0.1:egress.ProxyPort inside the box.

// Request operations.
const (
	opSetup      = "setup"
	opExec       = "exec"
	opStdin      = "stdin"
	opCloseStdin = "closestdin"
	opKill       = "kill"
	opTerm       = "term" // SIGTERM to the command (the wrapper shell's children)
	opReadFile   = "read"
	opWriteFile  = "write"
	opStat       = "stat"
	opReadDir    = "readdir"
	opDial       = "dial"
	opAttach     = "attach" // first frame of an attached connection (attach.go)
	opSignal     = "signal" // send Signal to a command's process group
	// opDrain (owner only): the owner is stopping the box; the init takes
	// no new attached connection or command, reports the attached
	// commands still running (kindAttached), then answers ok.
	opDrain = "drain"
	// opChown (owner only): lchown(2) Path to Owner (owner.go).
	opChown  = "chown"
	opResize = "resize" // set the window size of a command's terminal
	// opJoined tells the init it runs in its box's cgroup (the host moved
	// it there); only then does it accept attached connections, so that
	// no command starts outside the group.
	opJoined = "joined"
)

// Response kinds.
const (
	kindReady   = "ready"
	kindStarted = "started"
	kindOutput  = "out"
	kindExit    = "exit"
	kindOK      = "ok"
	kindError   = "error"
	// kindStdinAck acknowledges one stdin frame of a command: the init
	// wrote it to the command's stdin (or dropped it, the command having
	// closed its stdin), so the sender may send one more (stdinWindow).
	kindStdinAck = "stdinack"
	// kindAttached (id 0, to the owner): the number of commands attached
	// processes run (in PID), sent when it changes or an attached process
	// uses the box, so the owner counts it as use (its idle timer) and
	// can wait for them before stopping the box (Box.WaitAttached).
	kindAttached = "attached"
)

// stdinWindow is how many stdin frames of one command a sender may have
// sent and not yet seen acknowledged (kindStdinAck). The init queues that
// many per command (and the close frame), so the request loop never waits
// on a command that reads slowly, and no stdin byte is dropped.
const stdinWindow = 64

// attachProtocol is the version of the frames on an attach connection.
// An attaching process sends it in its hello (request.Version) and the
// init answers with its own (attachInfo.Protocol); a mismatch is refused
// with a message, never half-spoken. Version 1 added stdin flow control
// (kindStdinAck), WriteFile in parts (request.Offset, More) and frames of
// at most maxAttachFrame; inits before it send no version (0).
const attachProtocol = 1

// Error kinds carried in responses, mapped back to fs errors on the host.
const (
	errKindNotExist   = "notexist"
	errKindPermission = "permission"
	errKindExist      = "exist"
)

// request is one host→init frame.
type request struct {
	ID    uint64
	Op    string
	Setup *initSpec
	Exec  *execSpec
	Path  string
	Data  []byte
	Perm  uint32
	Port  int
	// Signal is the signal number of opSignal (attachSignals lists those
	// accepted).
	Signal int
	// Rows and Cols are the window size of opResize.
	Rows, Cols uint16
	// Version is the attach protocol of an opAttach hello (attachProtocol).
	Version int
	// Offset and More split an opWriteFile's data into parts on an
	// attached connection (attachWriteChunk): Data goes at Offset, and
	// More is set on every part but the last.
	Offset int64
	More   bool
	// Owner is the new owner of Path for opChown.
	Owner *backend.Account
}

// execSpec is a command to run inside the box.
type execSpec struct {
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
	// groups) instead of root; nil = root.
	RunAs *backend.Account
}

// exitInfo is how a command ended.
type exitInfo struct {
	Code     int    // exit status, -1 when killed by a signal
	Signal   string // "SIGKILL"... or ""
	TimedOut bool
}

// wireFileInfo is backend.FileInfo on the wire.
type wireFileInfo struct {
	Name    string
	Size    int64
	Mode    uint32
	ModTime time.Time
	IsDir   bool
}

// response is one init→host frame.
type response struct {
	ID      uint64
	Kind    string
	Data    []byte
	PID     int
	Exit    exitInfo
	Err     string
	ErrKind string
	Info    *wireFileInfo
	Infos   []wireFileInfo
	Phases  *initPhases // with kindReady: how long the init's setup took
	Shell   string      // with kindReady: the box's shell, /bin/bash or /bin/sh
	Stream  int         // with kindOutput: 2 = standard error of an execSpec.Stderr command, else 1
	Attach  *attachInfo // with kindReady on an attached connection
}

// attachInfo describes a running box to a process that attached to it.
type attachInfo struct {
	Task    string
	Env     []string // the base environment of commands (initSpec.Env)
	Workdir string
	Cgroup  string // the box's cgroup, below the hierarchies' roots (initSpec.Cgroup)
	// Protocol is the init's attachProtocol (0 from inits before it).
	Protocol int
}

// initPhases are the durations of the init's own start phases.
type initPhases struct {
	Root     time.Duration // mounts and pivot_root
	Restrict time.Duration // Landlock, capabilities, seccomp
}

// initSpec tells the init how to build the box (the first frame, opSetup).
type initSpec struct {
	Task string
	// SwitchUsers: the init keeps CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL
	// (Options.SwitchUsers) for execSpec.RunAs and opChown.
	SwitchUsers bool
	Lower       []string // read-only base layers, topmost first
	LayerDir    string   // host path where the writable layer filesystem is mounted
	// LayerImage is an ext4 image holding the writable layer (persistent
	// boxes); "" = a tmpfs of DiskMiB (the layer vanishes with the box).
	LayerImage string
	// LayerMounted: the host mounted LayerImage itself and passes the
	// detached mount on the connection socket before this frame
	// (layer_mount.go); the init moves it to LayerDir.
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
	Hostname  string
	CACertPEM []byte
	Egress    bool // listen on 127.0.0.1:egress.ProxyPort and relay
	UserNS    bool
	Landlock  bool
	// AttachSocket is the host path of the box's attach socket, which the
	// init listens on for other hermes processes of the box's owner
	// (attach.go); "" = none.
	AttachSocket string
	// AttachIdle is the idle timeout of attached connections (0 =
	// attachIdleTimeout).
	AttachIdle time.Duration
	// Env is the base environment of commands and Cgroup the box's
	// cgroup (cgroup.Name), both handed to attached processes.
	Env    []string
	Cgroup string
}

// frameConn serialises frames in one direction and decodes the other.
type frameConn struct {
	wmu sync.Mutex
	enc *gob.Encoder
	dec *gob.Decoder
	c   io.Closer
}

func newFrameConn(rw io.ReadWriteCloser) *frameConn {
	return &frameConn{enc: gob.NewEncoder(rw), dec: gob.NewDecoder(rw), c: rw}
}

// warmFrames encodes and decodes one request and one response with every
// field set, so that encoding/gob builds its per-type engines (which it
// keeps for the process) now instead of at the first frames of a box
// start: the init runs it while it boots, the host while the init boots.
// That saves about 0.5 ms of the start and the first command.
func warmFrames() {
	var buf bytes.Buffer
	enc, dec := gob.NewEncoder(&buf), gob.NewDecoder(&buf)
	info := wireFileInfo{Name: "w"}
	frames := []any{
		&request{ID: 1, Op: opSetup, Setup: &initSpec{Task: "w", Lower: []string{"/"}, Env: []string{"A=b"}, CACertPEM: []byte{1}},
			Exec: &execSpec{Argv: []string{"w"}, Env: []string{"A=b"}}, Data: []byte{1}},
		&response{ID: 1, Kind: kindReady, Data: []byte{1}, Exit: exitInfo{Code: 1}, Info: &info, Infos: []wireFileInfo{info},
			Phases: &initPhases{Root: 1}, Attach: &attachInfo{Task: "w", Env: []string{"A=b"}}},
	}
	for _, f := range frames {
		if enc.Encode(f) != nil {
			return
		}
	}
	var req request
	var resp response
	if dec.Decode(&req) == nil {
		dec.Decode(&resp)
	}
}

func (f *frameConn) send(v any) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return f.enc.Encode(v)
}

// errorResponse turns err into an error frame for request id.
func errorResponse(id uint64, err error) response {
	r := response{ID: id, Kind: kindError, Err: err.Error()}
	switch {
	case errors.Is(err, errDraining):
		r.ErrKind = errKindDraining
	case errors.Is(err, fs.ErrNotExist):
		r.ErrKind = errKindNotExist
	case errors.Is(err, fs.ErrPermission):
		r.ErrKind = errKindPermission
	case errors.Is(err, fs.ErrExist):
		r.ErrKind = errKindExist
	}
	return r
}

// responseError turns an error frame back into a Go error wrapping the
// matching fs sentinel, as a *fs.PathError for op on path.
func responseError(r response, op, path string) error {
	var base error
	switch r.ErrKind {
	case errKindNotExist:
		base = fs.ErrNotExist
	case errKindPermission:
		base = fs.ErrPermission
	case errKindExist:
		base = fs.ErrExist
	case errKindDraining:
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

// sendConnFD passes the socket of c over the connection socket with
// SCM_RIGHTS, tagged with id, then closes c.
func sendConnFD(sock *net.UnixConn, mu *sync.Mutex, id uint64, c net.Conn) error {
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

// recvConnFD receives one passed socket and its id.
func recvConnFD(sock *net.UnixConn) (uint64, net.Conn, error) {
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
