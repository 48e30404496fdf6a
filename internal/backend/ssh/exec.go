package ssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/shellfs"
)

// Output kept in memory per command, as the local backend keeps it.
const (
	execHeadMax       = 8 << 20
	execTailMax       = 8 << 20
	backgroundHeadMax = 64 << 10
	backgroundTailMax = 1 << 20
)

// killGrace is how long a process group has between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// noWorkdir is printed on stderr by the wrapper when the working
// directory does not exist.
const noWorkdir = "HERMES_SSH_NO_WORKDIR"

// Environment is one task's view of the remote host.
type Environment struct {
	client  *ssh.Client
	task    string
	workdir string

	mu    sync.Mutex
	procs map[*process]bool
}

// Workdir is the remote working directory.
func (e *Environment) Workdir() string { return e.workdir }

// quote returns s as one single-quoted POSIX shell word.
func quote(s string) string { return shellfs.Quote(s) }

// abs resolves p against the workdir.
func (e *Environment) abs(p string) string {
	if p == "" {
		return e.workdir
	}
	if strings.HasPrefix(p, "/") {
		return p
	}
	return strings.TrimSuffix(e.workdir, "/") + "/" + p
}

// resolveWorkdir asks the remote shell for the absolute working
// directory (the home when wd is empty), creating nothing.
func (e *Environment) resolveWorkdir(ctx context.Context, wd string) (string, error) {
	cmd := `cd && pwd -P`
	if wd != "" {
		cmd = `cd -- ` + quote(wd) + ` && pwd -P`
	}
	out, code, err := e.run(ctx, cmd, nil)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("ssh: the remote working directory %q does not exist (terminal.cwd): %s", wd, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// run runs a helper command to completion and returns its combined output
// and exit code.
func (e *Environment) run(ctx context.Context, cmd string, stdin io.Reader) ([]byte, int, error) {
	s, err := e.client.NewSession()
	if err != nil {
		return nil, 0, fmt.Errorf("ssh session: %w", err)
	}
	defer s.Close()
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	s.Stdout, s.Stderr, s.Stdin = w, w, stdin
	err = runCtx(ctx, s, cmd)
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return out.Bytes(), 0, nil
	case errors.As(err, &exit):
		return out.Bytes(), exit.ExitStatus(), nil
	case ctx.Err() != nil:
		return nil, 0, ctx.Err()
	}
	return nil, 0, fmt.Errorf("ssh: %w", err)
}

// script wraps req's command: report the group id (the session shell's
// pid: sshd makes it a session leader) on stderr, enter the workdir, set
// the environment, then run the command with stderr merged into stdout so
// the output keeps its order.
func (e *Environment) script(req backend.ExecRequest) string {
	var b strings.Builder
	b.WriteString(`echo "$$" >&2; cd -- ` + quote(e.abs(req.Workdir)) + ` 2>/dev/null || { echo ` + noWorkdir + ` >&2; exit 127; }; `)
	env := map[string]string{"HERMES_SESSION_ID": e.task}
	for k, v := range req.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if validName(k) {
			b.WriteString("export " + k + "=" + quote(env[k]) + "; ")
		}
	}
	b.WriteString("exec sh -c " + quote(req.Command) + " 2>&1")
	return b.String()
}

func validName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// process is a command running on the remote host.
type process struct {
	env     *Environment
	session *ssh.Session
	stdin   io.WriteCloser
	out     *backend.Capture
	began   time.Time

	pid       int
	noWorkdir bool // the workdir did not exist: nothing ran
	killOnce  sync.Once
	killed   chan struct{}
	done     chan struct{}
	res      backend.ExecResult
	stdinMu  sync.Mutex
}

// launch starts req; the returned process has its group id.
func (e *Environment) launch(ctx context.Context, req backend.ExecRequest, out *backend.Capture, writable bool) (*process, error) {
	s, err := e.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("ssh session: %w", err)
	}
	p := &process{env: e, session: s, out: out, began: time.Now(), killed: make(chan struct{}), done: make(chan struct{})}
	var w io.Writer = out
	if req.Output != nil {
		w = io.MultiWriter(out, req.Output)
	}
	s.Stdout = &lockedWriter{w: w}
	stderr, err := s.StderrPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	switch {
	case req.Stdin != nil:
		s.Stdin = req.Stdin
	case writable:
		if p.stdin, err = s.StdinPipe(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.Start(e.script(req)); err != nil {
		s.Close()
		return nil, fmt.Errorf("ssh: start %q: %w", req.Command, err)
	}
	lines := bufio.NewReader(stderr)
	pidLine := make(chan string, 1)
	go func() {
		line, _ := lines.ReadString('\n')
		pidLine <- strings.TrimSpace(line)
		second, _ := lines.ReadString('\n')
		if strings.TrimSpace(second) == noWorkdir {
			pidLine <- noWorkdir
		}
		_, _ = io.Copy(io.Discard, lines)
		close(pidLine)
	}()
	select {
	case line := <-pidLine:
		p.pid, _ = strconv.Atoi(line)
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	if p.pid <= 0 {
		s.Close()
		return nil, errors.New("ssh: the remote shell did not start the command")
	}
	go p.wait(req.Timeout, pidLine)
	return p, nil
}

// wait collects the exit status, ending the group on timeout or Kill.
func (p *process) wait(timeout time.Duration, stderrLines <-chan string) {
	waited := make(chan error, 1)
	go func() { waited <- p.session.Wait() }()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	var err error
	var timedOut bool
	select {
	case err = <-waited:
	case <-expire:
		timedOut = true
		err = p.endGroup(waited)
	case <-p.killed:
		err = p.endGroup(waited)
	}
	res := backend.ExecResult{Output: p.out.Bytes(), TimedOut: timedOut, Duration: time.Since(p.began)}
	var exit *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Signal() != "":
		res.ExitCode, res.Signal = -1, "SIG"+exit.Signal()
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitStatus()
	default:
		res.ExitCode = -1
	}
	for line := range stderrLines {
		p.noWorkdir = p.noWorkdir || line == noWorkdir
	}
	p.res = res
	p.session.Close()
	close(p.done)
	p.env.mu.Lock()
	delete(p.env.procs, p)
	p.env.mu.Unlock()
}

// endGroup sends SIGTERM to the command's process group from a second
// session, then SIGKILL after killGrace, and waits for the session.
func (p *process) endGroup(waited <-chan error) error {
	signal := func(sig string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, _ = p.env.run(ctx, fmt.Sprintf("kill -%s -- -%d 2>/dev/null", sig, p.pid), nil)
	}
	signal("TERM")
	select {
	case err := <-waited:
		return err
	case <-time.After(killGrace):
	}
	signal("KILL")
	select {
	case err := <-waited:
		return err
	case <-time.After(10 * time.Second):
		p.session.Close()
		return <-waited
	}
}

// Exec runs req to completion.
func (e *Environment) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	out := backend.NewCapture(execHeadMax, execTailMax)
	if req.DiscardOutput && req.Output != nil {
		out = backend.NewCapture(0, 0)
	}
	p, err := e.launch(ctx, req, out, false)
	if err != nil {
		return backend.ExecResult{}, err
	}
	e.track(p)
	select {
	case <-p.done:
	case <-ctx.Done():
		_ = p.Kill()
	}
	if p.noWorkdir {
		return backend.ExecResult{}, fmt.Errorf("workdir %s does not exist on %s", e.abs(req.Workdir), e.client.RemoteAddr())
	}
	if err := ctx.Err(); err != nil {
		return p.res, err
	}
	return p.res, nil
}

// Start runs req in the background.
func (e *Environment) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	p, err := e.launch(ctx, req, backend.NewCapture(backgroundHeadMax, backgroundTailMax), req.Stdin == nil)
	if err != nil {
		return nil, err
	}
	e.track(p)
	return p, nil
}

func (e *Environment) track(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-p.done:
	default:
		e.procs[p] = true
	}
}

// Close ends the environment's running commands (their process groups).
// As with the local backend, what a finished command detached (`nohup
// server &`) keeps running on the host.
func (e *Environment) Close() error {
	e.mu.Lock()
	procs := e.procs
	e.procs = map[*process]bool{}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() { _ = p.Kill() })
	}
	wg.Wait()
	return nil
}

// PID is the remote process (and group) id.
func (p *process) PID() int { return p.pid }

// Write sends data to the command's stdin.
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

// CloseStdin sends end of file.
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

// Kill ends the command's process group and waits for it.
func (p *process) Kill() error {
	p.killOnce.Do(func() { close(p.killed) })
	<-p.done
	return nil
}

// Wait blocks until the command exits or ctx ends (then the error is
// ctx.Err() and the command keeps running).
func (p *process) Wait(ctx context.Context) (backend.ExecResult, error) {
	select {
	case <-p.done:
		return p.res, nil
	case <-ctx.Done():
		return backend.ExecResult{Output: p.out.Bytes()}, ctx.Err()
	}
}

// Output is what the command printed so far.
func (p *process) Output() []byte { return p.out.Bytes() }

// Done reports whether the command has exited.
func (p *process) Done() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// runCtx runs cmd on s, closing the session when ctx ends first.
func runCtx(ctx context.Context, s *ssh.Session, cmd string) error {
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}
