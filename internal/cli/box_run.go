package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/protect"
)

// runBoxCommand runs c in b and turns its end into hermes's exit status
// (boxExitError). When ctx ends first (SIGINT or SIGTERM to hermes, see
// SignalContext) the command gets SIGTERM and stopTimeout to exit, then
// its tree is killed. A second signal ends hermes at once, and the box
// kills what hermes started (an attached box drops it with the
// connection, a box hermes runs stops with it).
func (a *App) runBoxCommand(ctx context.Context, b *box.Box, c box.Command, stopTimeout time.Duration) error {
	p, err := b.Command(ctx, c)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &ExitError{Code: 127, Err: err}
		}
		return err
	}
	if b.Attached() {
		// A box this process owns is stopped when the command (and any
		// other process's command in it) ends, and its stop checks the
		// workspace with nothing left running (Box.Close): a check here
		// too walked the whole workspace twice (withBoxImage).
		defer a.checkBoxWorkspace(b)
	}
	return a.waitBoxCommand(ctx, p, stopTimeout)
}

// boxCommandContext is ctx, also ended by SIGHUP (the terminal went) and
// SIGPIPE (hermes's output goes to a pipe whose reader left, as with
// `| head -1`), for box exec and box shell. Either signal used to end hermes
// at once, before the workspace check at the box's stop, and the next start
// took what the command had left in the workspace for the user's own
// (attacker trial, 2026-12-06): now the command gets SIGTERM as for SIGINT
// and the box stops, checked. Writes to a gone reader then fail with EPIPE.
// When the cause was SIGPIPE (errOutputGone), the command's end is not
// reported: hermes exits 141 (128+SIGPIPE) quietly, as a command of a
// shell pipeline whose reader left does (`hermes box exec T -- yes | head`).
func boxCommandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		select {
		case s := <-sigs:
			if s == syscall.SIGPIPE {
				cancel(errOutputGone)
			} else {
				cancel(errors.New("hermes got SIGHUP (its terminal went)"))
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// errOutputGone is the cause of a box command's context when hermes got
// SIGPIPE: the reader of its output left.
var errOutputGone = errors.New("hermes's output went to a reader that left (SIGPIPE)")

// checkBoxWorkspace runs the workspace check that follows each agent
// command (box.Box.CheckProtected) after a box exec or box shell command
// and tells the person what it moved.
func (a *App) checkBoxWorkspace(b *box.Box) {
	if note := b.CheckProtected(); note != "" {
		fmt.Fprintln(a.Stderr, note)
	}
}

type boxWait struct {
	res backend.ExecResult
	err error
}

func (a *App) waitBoxCommand(ctx context.Context, p box.Process, stopTimeout time.Duration) error {
	done := make(chan boxWait, 1)
	go func() {
		res, err := p.Wait(context.Background())
		done <- boxWait{res, err}
	}()
	select {
	case w := <-done:
		return boxWaitError(w)
	case <-ctx.Done():
	}
	p.Signal(syscall.SIGTERM) // no wrapper shell: the command's own process group
	ended := boxWaitError
	if errors.Is(context.Cause(ctx), errOutputGone) {
		ended = func(w boxWait) error {
			if w.err != nil {
				return w.err
			}
			return &ExitError{Code: 128 + int(syscall.SIGPIPE), Silent: true}
		}
	}
	select {
	case w := <-done:
		return ended(w)
	case <-time.After(stopTimeout):
	}
	p.Kill()
	select {
	case w := <-done:
		return ended(w)
	case <-time.After(10 * time.Second):
		return errors.New("the command in the box did not end after SIGKILL")
	}
}

func boxWaitError(w boxWait) error {
	if w.err != nil {
		return w.err
	}
	return boxExitError(w.res)
}

// boxShell runs the box's shell: on a pseudo-terminal of the box when
// hermes's stdin and stdout are a terminal (raw mode on the host, window
// size followed), else reading commands from stdin (then a failure that
// points at a protected path gets noteProtectedFailure's note).
func (a *App) boxShell(ctx context.Context, b *box.Box, protected protect.Set) error {
	in, inOK := a.Stdin.(*os.File)
	out, outOK := a.Stdout.(*os.File)
	if !a.IsTerminal || !inOK || !outOK {
		return a.noteProtectedFailure(protected, a.Stdout, a.Stderr, func(stdout, stderr io.Writer) error {
			return a.runBoxCommand(ctx, b, box.Command{Argv: []string{b.Shell()}, Stdin: a.Stdin, Stdout: stdout, Stderr: stderr}, shellStopTimeout)
		})
	}
	c := box.Command{Argv: []string{b.Shell()}, Stdin: in, Stdout: out, TTY: true}
	if t := a.Getenv("TERM"); t != "" {
		c.Env = map[string]string{"TERM": t}
	}
	if w, h, err := term.GetSize(int(out.Fd())); err == nil {
		c.Rows, c.Cols = uint16(h), uint16(w)
	}
	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	defer term.Restore(int(in.Fd()), old)
	p, err := b.Command(ctx, c)
	if err != nil {
		return err
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer func() { signal.Stop(winch); close(winch) }()
	go func() {
		for range winch {
			if w, h, err := term.GetSize(int(out.Fd())); err == nil {
				p.Resize(uint16(h), uint16(w))
			}
		}
	}()
	err = a.waitBoxCommand(ctx, p, shellStopTimeout)
	term.Restore(int(in.Fd()), old) // the note below reads as lines again
	a.checkBoxWorkspace(b)
	return err
}

// shellStopTimeout is how long box shell's shell has to exit after the
// SIGTERM that a SIGINT or SIGTERM to hermes sends it.
const shellStopTimeout = 2 * time.Second
