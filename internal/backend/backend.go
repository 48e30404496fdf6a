// Package backend defines where the terminal and file tools run: the
// terminal.backend of Hermes Agent (local, box, and hosted adapters). A
// Backend hands out one Environment per task (session); every terminal
// command and file operation of that task goes through it.
package backend

import (
	"context"
	"io"
	"io/fs"
	"net"
	"time"
)

// Backend creates and caches environments, one per task id.
type Backend interface {
	// Kind is the backend name as written in terminal.backend (local, box...).
	Kind() string
	// Open returns the environment of taskID, creating it on first use and
	// reusing it afterwards. Errors are infrastructure failures (the box
	// could not start) and say which piece is missing and how to fix it.
	Open(ctx context.Context, taskID string) (Environment, error)
	// Close stops every environment (persistent state is kept).
	Close() error
}

// ExecRequest is one shell command.
type ExecRequest struct {
	Command string            // run by /bin/sh -c (bash -c where present)
	Workdir string            // absolute, or relative to the environment's workdir; "" = workdir
	Env     map[string]string // added to the environment's base env
	Timeout time.Duration     // 0 = no timeout; on expiry the whole process tree is killed
	Stdin   io.Reader         // nil = no input
	// Output, when set, receives the combined stdout/stderr as it is produced
	// (for streaming to a person); the result still holds the captured output.
	Output io.Writer
	// DiscardOutput, with Output set, leaves ExecResult.Output empty: the
	// caller keeps what it needs from Output, so the backend holds no copy
	// of a large output in memory.
	DiscardOutput bool
	// Stderr, when set, receives the command's stderr apart from its stdout
	// (for clients that keep the two streams apart, e.g. the E2B protocol);
	// Output and ExecResult.Output then hold stdout only. Backends that
	// cannot tell the streams apart write both to Output.
	Stderr io.Writer
	// RunAs runs the command as this user and group of the environment
	// instead of its default user (root in a box); nil = the default. The
	// box backend honours it (the E2B-compatible server runs commands as
	// E2B's `user`, uid 1000); other backends ignore it.
	RunAs *Account
}

// Account is a numeric user and group id inside an environment.
type Account struct {
	UID, GID uint32
}

// ExecResult is the outcome of a command. A non-zero exit is a result, not an error.
type ExecResult struct {
	ExitCode  int    // -1 when killed by a signal
	Signal    string // e.g. "SIGKILL", "" when exited normally
	Output    []byte // combined stdout and stderr, in order
	TimedOut  bool
	OOMKilled bool // the kernel OOM killer ended the command
	Duration  time.Duration
}

// Process is a command started in the background.
type Process interface {
	// PID is the process id as seen by the environment.
	PID() int
	// Write sends data to the process's stdin.
	Write(p []byte) (int, error)
	// CloseStdin closes the process's stdin.
	CloseStdin() error
	// Kill ends the process and its children.
	Kill() error
	// Wait blocks until exit (or ctx ends) and returns the result so far.
	Wait(ctx context.Context) (ExecResult, error)
	// Output returns the output captured so far.
	Output() []byte
	// Done reports whether the process has exited.
	Done() bool
}

// FileInfo describes a file in an environment.
type FileInfo struct {
	Name    string
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
	IsDir   bool
}

// Environment is one task's place to run commands and touch files. Paths
// are absolute in the environment's view, or relative to Workdir.
// Errors from file operations wrap fs.ErrNotExist / fs.ErrPermission where
// those apply.
type Environment interface {
	// Workdir is the default working directory of commands and relative paths.
	Workdir() string
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	Start(ctx context.Context, req ExecRequest) (Process, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces path atomically, creating parent directories.
	WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error
	Stat(ctx context.Context, path string) (FileInfo, error)
	ReadDir(ctx context.Context, path string) ([]FileInfo, error)
	// Close stops the environment's processes; persistent files are kept.
	Close() error
}

// UnixDialer is an Environment whose unix sockets the host can reach
// (local, box): DialUnix connects to the socket at the absolute path as
// the environment's commands see it. execute_code needs it.
type UnixDialer interface {
	DialUnix(ctx context.Context, path string) (net.Conn, error)
}

// Isolated reports whether b runs commands behind a boundary of its own
// (the box, a container, a hosted sandbox), which the backend declares
// with an Isolated() bool method. Approvals skip dangerous-command checks
// for such backends; a backend without the method is not isolated.
func Isolated(b Backend) bool {
	i, ok := b.(interface{ Isolated() bool })
	return ok && i.Isolated()
}

// StdinSink is the stdin side of a started command.
type StdinSink interface {
	Write(p []byte) (int, error)
	CloseStdin() error
}

// FeedStdin copies r to p's stdin in writes of at most chunk bytes, then
// closes it (at r's end or error); it stops early when a write fails (the
// command ended).
func FeedStdin(p StdinSink, r io.Reader, chunk int) {
	buf := make([]byte, chunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := p.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			p.CloseStdin()
			return
		}
	}
}
