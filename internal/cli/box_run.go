package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box"
)

// runBoxCommand runs c in b and turns its end into hermes's exit status
// (boxExitError). When ctx ends first (SIGINT or SIGTERM to hermes, see
// SignalContext) the signal is passed on to the command, whose end is then
// awaited; a second signal ends hermes, and the box kills what hermes
// started (an attached box drops it with the connection, a box hermes runs
// stops with it).
func (a *App) runBoxCommand(ctx context.Context, b *box.Box, c box.Command) error {
	p, err := b.Command(ctx, c)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &ExitError{Code: 127, Err: err}
		}
		return err
	}
	return a.waitBoxCommand(ctx, p)
}

type boxWait struct {
	res backend.ExecResult
	err error
}

func (a *App) waitBoxCommand(ctx context.Context, p box.Process) error {
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
	var se SignalError
	if errors.As(context.Cause(ctx), &se) {
		p.Signal(se.Signal)
		return boxWaitError(<-done)
	}
	p.Kill()
	select {
	case w := <-done:
		return boxWaitError(w)
	case <-time.After(5 * time.Second):
		return ctx.Err()
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
// size followed), else reading commands from stdin.
func (a *App) boxShell(ctx context.Context, b *box.Box) error {
	in, inOK := a.Stdin.(*os.File)
	out, outOK := a.Stdout.(*os.File)
	if !a.IsTerminal || !inOK || !outOK {
		return a.runBoxCommand(ctx, b, box.Command{Argv: []string{b.Shell()}, Stdin: a.Stdin, Stdout: a.Stdout, Stderr: a.Stderr})
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
	return a.waitBoxCommand(ctx, p)
}
