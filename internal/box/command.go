package box

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box/wire"
)

// Command is a command for Box.Command: Argv run directly, not through a
// shell (Argv[0] without a slash is looked up in the box's PATH).
type Command struct {
	Argv    []string
	Env     map[string]string // added to the box's environment
	Dir     string            // working directory; "" = Workdir
	Stdin   io.Reader         // nil = /dev/null
	Stdout  io.Writer         // nil = discarded
	Stderr  io.Writer         // nil = sent to Stdout
	Timeout time.Duration     // 0 = none; on expiry the command's tree is killed
	// TTY runs the command on a pseudo-terminal of the box of Rows×Cols
	// (0 = the kernel's default): its controlling terminal, with stdin,
	// stdout and stderr on it (everything goes to Stdout), line editing
	// and job control; a ^C in Stdin reaches its foreground job.
	TTY        bool
	Rows, Cols uint16
}

// Process is a command started by Box.Command. Its Output is empty: what
// it prints goes to Command.Stdout and Stderr only.
type Process interface {
	backend.Process
	// Signal sends sig to the command's process group (on a terminal: to
	// the terminal's foreground process group). SIGHUP, SIGINT, SIGQUIT,
	// SIGKILL, SIGUSR1, SIGUSR2, SIGTERM, SIGCONT, SIGTSTP and SIGWINCH
	// are passed; others are ignored.
	Signal(sig syscall.Signal) error
	// Resize sets the window size of the command's terminal (TTY only).
	Resize(rows, cols uint16) error
}

// Command starts c in the box.
func (b *Box) Command(ctx context.Context, c Command) (Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("box: empty command")
	}
	p := &boxProcess{box: b, out: c.Stdout, errOut: c.Stderr, discard: true}
	if p.out == nil {
		p.out = io.Discard
	}
	spec := &wire.ExecSpec{Argv: c.Argv, Dir: b.abs(c.Dir), Env: b.commandEnv(c.Env), Timeout: c.Timeout,
		Stdin: c.Stdin != nil, Search: true, Stderr: c.Stderr != nil && !c.TTY, TTY: c.TTY, Rows: c.Rows, Cols: c.Cols}
	var err error
	if spec.RunAs, err = b.imageRunAs(ctx); err != nil { // the OCI image's User (oci_user.go)
		return nil, err
	}
	return b.startSpec(ctx, spec, p, c.Stdin)
}

// Signal sends sig to the command (see Process).
func (p *boxProcess) Signal(sig syscall.Signal) error {
	if p.Done() {
		return nil
	}
	return p.box.fc.Send(wire.Request{ID: p.id, Op: wire.OpSignal, Signal: int(sig)})
}

// Resize sets the window size of the command's terminal.
func (p *boxProcess) Resize(rows, cols uint16) error {
	if p.Done() {
		return nil
	}
	return p.box.fc.Send(wire.Request{ID: p.id, Op: wire.OpResize, Rows: rows, Cols: cols})
}
