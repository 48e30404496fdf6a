package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Start runs req.Command in the background with `bash -c` in its own process
// group, confined like Exec, and returns at once. Background processes
// end with hermes in every case: Close kills them on a normal exit, and
// the supervisor kills their groups when hermes is killed. ctx only bounds the start; the process runs
// until it exits, req.Timeout (if set) expires, Kill is called or the
// environment is closed. Output (stdout and stderr, in order) is kept in a
// bounded buffer: the first 64 KiB and the last 1 MiB.
func (e *Environment) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd, err := e.command(req)
	if err != nil {
		return nil, err
	}
	out := backend.NewCapture(backgroundHeadMax, backgroundTailMax)
	var w io.Writer = out
	if req.Output != nil {
		w = io.MultiWriter(out, req.Output)
	}
	sink := &lockedWriter{w: w}
	cmd.Stdout, cmd.Stderr = sink, sink
	var stdin io.WriteCloser
	if req.Stdin != nil {
		cmd.Stdin = req.Stdin
	} else if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	cmd.WaitDelay = outputDrainDelay
	p := &process{cmd: cmd, stdin: stdin, out: out, done: make(chan struct{}), killed: make(chan struct{}), started: time.Now()}
	release, err := e.startCmd(cmd)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.procs[p] = true
	e.mu.Unlock()
	go p.wait(req.Timeout, func() {
		release()
		e.mu.Lock()
		delete(e.procs, p)
		e.mu.Unlock()
	})
	return p, nil
}

// process is a background command.
type process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser // nil when the request gave its own stdin
	out     *backend.Capture
	started time.Time

	stdinMu  sync.Mutex
	killOnce sync.Once
	killed   chan struct{} // closed by Kill
	done     chan struct{} // closed when the process has exited

	res backend.ExecResult // valid after done
}

func (p *process) wait(timeout time.Duration, finished func()) {
	defer finished()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	var timedOut bool
	var err error
	select {
	case err = <-waited:
	case <-expire:
		timedOut = true
		err = killGroup(p.cmd.Process.Pid, waited)
	case <-p.killed:
		err = killGroup(p.cmd.Process.Pid, waited)
	}
	res := result(p.cmd.ProcessState, err)
	res.TimedOut = timedOut
	res.Duration = time.Since(p.started)
	p.res = res
	close(p.done)
}

// PID is the host process id of the shell (also its process group id).
func (p *process) PID() int { return p.cmd.Process.Pid }

// Write sends data to the process's stdin.
func (p *process) Write(b []byte) (int, error) {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return 0, errors.New("stdin is closed or was given at start")
	}
	if p.Done() {
		return 0, errors.New("process has exited")
	}
	return p.stdin.Write(b)
}

// CloseStdin closes stdin so the process reads end of file.
func (p *process) CloseStdin() error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return nil
	}
	err := p.stdin.Close()
	p.stdin = nil
	return err
}

// Kill ends the process group: SIGTERM, then SIGKILL after 2 s. It
// returns once the process has exited. Killing an exited process is a no-op.
func (p *process) Kill() error {
	p.killOnce.Do(func() { close(p.killed) })
	<-p.done
	return nil
}

// Wait blocks until the process exits or ctx ends. It returns the result
// with the output so far; when ctx ends first the error is ctx.Err() and
// the process keeps running.
func (p *process) Wait(ctx context.Context) (backend.ExecResult, error) {
	select {
	case <-p.done:
		res := p.res
		res.Output = p.out.Bytes()
		return res, nil
	case <-ctx.Done():
		return backend.ExecResult{ExitCode: -1, Output: p.out.Bytes(), Duration: time.Since(p.started)}, ctx.Err()
	}
}

// Output returns the output captured so far.
func (p *process) Output() []byte { return p.out.Bytes() }

// Done reports whether the process has exited.
func (p *process) Done() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
