package backend

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Lifecycle is the exit and kill state that a background Process of the
// local, shellexec (ssh, docker) and vercel_sandbox backends shares. A
// process type embeds a *Lifecycle and gets Kill, Wait, Output and Done;
// its own wait loop selects on Killed (and its timeout), ends the process
// tree its own way, and calls Finish once with the exit status. With a
// stdin pipe it also gets Write and CloseStdin.
type Lifecycle struct {
	out      *Capture
	began    time.Time
	stdinMu  sync.Mutex
	stdin    io.WriteCloser // nil when closed or the request gave its own stdin
	killOnce sync.Once
	killed   chan struct{} // closed by Kill
	done     chan struct{} // closed by Finish
	res      ExecResult    // set by Finish, before done closes
}

// NewLifecycle returns the state of a process started at began whose
// output goes to out and whose stdin is fed through stdin (nil: none).
func NewLifecycle(out *Capture, stdin io.WriteCloser, began time.Time) *Lifecycle {
	return &Lifecycle{out: out, stdin: stdin, began: began, killed: make(chan struct{}), done: make(chan struct{})}
}

// Killed is closed when Kill was called: the wait loop ends the process.
func (l *Lifecycle) Killed() <-chan struct{} { return l.killed }

// KillRequested reports whether Kill was called.
func (l *Lifecycle) KillRequested() bool {
	select {
	case <-l.killed:
		return true
	default:
		return false
	}
}

// Exited is closed once Finish has recorded the result.
func (l *Lifecycle) Exited() <-chan struct{} { return l.done }

// Finish records the exit (res's Output and Duration are filled in from
// the capture and the start time) and releases Wait and Kill. The wait
// loop calls it exactly once.
func (l *Lifecycle) Finish(res ExecResult) {
	res.Output = l.out.Bytes()
	res.Duration = time.Since(l.began)
	l.res = res
	close(l.done)
}

// Result is the recorded exit; valid once Exited is closed.
func (l *Lifecycle) Result() ExecResult { return l.res }

// Kill asks the wait loop to end the process tree and returns once the
// process has exited. Killing an exited process is a no-op.
func (l *Lifecycle) Kill() error {
	l.killOnce.Do(func() { close(l.killed) })
	<-l.done
	return nil
}

// Wait blocks until the process exits or ctx ends. When ctx ends first the
// result has exit code -1 and the output so far, the error is ctx.Err(),
// and the process keeps running.
func (l *Lifecycle) Wait(ctx context.Context) (ExecResult, error) {
	select {
	case <-l.done:
		return l.res, nil
	case <-ctx.Done():
		return ExecResult{ExitCode: -1, Output: l.out.Bytes(), Duration: time.Since(l.began)}, ctx.Err()
	}
}

// Output returns the output captured so far.
func (l *Lifecycle) Output() []byte { return l.out.Bytes() }

// Done reports whether the process has exited.
func (l *Lifecycle) Done() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Write sends data to the process's stdin.
func (l *Lifecycle) Write(b []byte) (int, error) {
	l.stdinMu.Lock()
	defer l.stdinMu.Unlock()
	if l.stdin == nil {
		return 0, errors.New("stdin is closed or was given at start")
	}
	if l.Done() {
		return 0, errors.New("process has exited")
	}
	return l.stdin.Write(b)
}

// CloseStdin closes stdin so the process reads end of file.
func (l *Lifecycle) CloseStdin() error {
	l.stdinMu.Lock()
	defer l.stdinMu.Unlock()
	if l.stdin == nil {
		return nil
	}
	err := l.stdin.Close()
	l.stdin = nil
	return err
}
