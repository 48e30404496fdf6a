// Package local is the "local" terminal backend of Hermes Agent
// ("terminal-backends.md"): commands and file operations run directly on
// the host, in the configured working directory, with the agent's own
// secrets scrubbed from the command environment. It gives no isolation;
// the approval service is the only guard.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Limits of captured output held in memory per command. The terminal tool
// streams the complete output to a file through ExecRequest.Output.
const (
	execHeadMax       = 8 << 20  // first 8 MiB of a foreground command
	execTailMax       = 8 << 20  // last 8 MiB of a foreground command
	backgroundHeadMax = 64 << 10 // first 64 KiB of a background process
	backgroundTailMax = 1 << 20  // last 1 MiB of a background process
)

// killGrace is how long a process group has between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// outputDrainDelay bounds how long Exec waits for output after the shell
// exits while a process it left behind still holds the output pipe open.
const outputDrainDelay = time.Second

// Backend is the local backend: one Environment per task id, all rooted at
// the same working directory.
type Backend struct {
	cwd         string
	passthrough []string
	environ     func() []string

	mu   sync.Mutex
	envs map[string]*Environment
}

// New returns a local backend whose commands start in cwd (terminal.cwd;
// "" or "." means the current directory of this process; "~" is expanded
// from HOME in environ). passthrough lists variable names kept in the
// command environment even though they look secret
// (terminal.env_passthrough). environ returns the host environment as
// "NAME=value" entries; nil means os.Environ. The error names terminal.cwd
// when the directory does not exist.
func New(cwd string, passthrough []string, environ func() []string) (*Backend, error) {
	if environ == nil {
		environ = os.Environ
	}
	dir, err := resolveCwd(cwd, environ())
	if err != nil {
		return nil, err
	}
	return &Backend{cwd: dir, passthrough: passthrough, environ: environ, envs: map[string]*Environment{}}, nil
}

func resolveCwd(cwd string, environ []string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	cwd = expandHome(cwd, lookup(environ, "HOME"))
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("terminal.cwd %q: %w", cwd, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("terminal.cwd %q: %w; set terminal.cwd in config.yaml to an existing directory", cwd, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("terminal.cwd %q is not a directory; set terminal.cwd in config.yaml to an existing directory", cwd)
	}
	return abs, nil
}

// Kind returns "local".
func (b *Backend) Kind() string { return "local" }

// Workdir is the directory commands start in.
func (b *Backend) Workdir() string { return b.cwd }

// SecretValues returns the values of the credential variables scrubbed from
// the host environment, for redacting command output.
func (b *Backend) SecretValues() []string {
	_, secrets := ScrubEnv(b.environ(), b.passthrough)
	return secrets
}

// Open returns the environment of taskID, creating it on first use. The
// environment exports HERMES_SESSION_ID=taskID to every command.
func (b *Backend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.envs[taskID]; ok {
		return e, nil
	}
	kept, _ := ScrubEnv(b.environ(), b.passthrough)
	if taskID != "" {
		kept = append(kept, "HERMES_SESSION_ID="+taskID)
	}
	e := &Environment{workdir: b.cwd, env: kept, home: lookup(kept, "HOME"), procs: map[*process]bool{}}
	b.envs[taskID] = e
	return e, nil
}

// Close kills every running command of every environment.
func (b *Backend) Close() error {
	b.mu.Lock()
	envs := b.envs
	b.envs = map[string]*Environment{}
	b.mu.Unlock()
	var errs []error
	for _, e := range envs {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}

// Environment is one task's view of the host.
type Environment struct {
	workdir string
	env     []string // scrubbed base environment
	home    string

	mu    sync.Mutex
	procs map[*process]bool
}

var _ backend.Environment = (*Environment)(nil)

// Workdir is the default directory of commands and relative paths.
func (e *Environment) Workdir() string { return e.workdir }

// Env returns a copy of the environment commands get (scrubbed host
// environment plus HERMES_SESSION_ID), as "NAME=value" entries.
func (e *Environment) Env() []string { return append([]string(nil), e.env...) }

// Resolve turns an environment path into an absolute host path: "~" and
// "~/x" expand to HOME, relative paths join the workdir.
func (e *Environment) Resolve(path string) string {
	path = expandHome(path, e.home)
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.workdir, path)
	}
	return filepath.Clean(path)
}

func (e *Environment) command(req backend.ExecRequest) (*exec.Cmd, error) {
	dir := e.workdir
	if req.Workdir != "" {
		dir = e.Resolve(req.Workdir)
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("workdir %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("workdir %s is not a directory", dir)
	}
	cmd := exec.Command(shellPath(), "-c", req.Command)
	cmd.Dir = dir
	cmd.Env = append([]string(nil), e.env...)
	for k, v := range req.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Own process group, so a timeout or Kill reaches every descendant.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// shellPath is bash where installed, else /bin/sh.
func shellPath() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// Exec runs req.Command with `bash -c` (fallback /bin/sh) and waits for it.
// A non-zero exit is reported in the result, not as an error. On timeout or
// ctx cancellation the whole process group gets SIGTERM, then SIGKILL after
// 2 s; TimedOut is set for a timeout. Errors are infrastructure failures:
// the workdir is missing or the shell could not start.
func (e *Environment) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	cmd, err := e.command(req)
	if err != nil {
		return backend.ExecResult{ExitCode: -1}, err
	}
	out := newCapture(execHeadMax, execTailMax)
	var w io.Writer = out
	switch {
	case req.Output != nil && req.DiscardOutput:
		out = nil
		w = req.Output
	case req.Output != nil:
		w = io.MultiWriter(out, &lockedWriter{w: req.Output})
	}
	sink := &lockedWriter{w: w}
	cmd.Stdout, cmd.Stderr = sink, sink // one pipe: stdout and stderr stay in order
	cmd.Stdin = req.Stdin
	cmd.WaitDelay = outputDrainDelay
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return backend.ExecResult{ExitCode: -1}, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var timedOut bool
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-timeout:
		timedOut = true
		waitErr = killGroup(cmd.Process.Pid, waited)
	case <-ctx.Done():
		waitErr = killGroup(cmd.Process.Pid, waited)
	}
	res := result(cmd.ProcessState, waitErr)
	if out != nil {
		res.Output = out.Bytes()
	}
	res.TimedOut = timedOut
	res.Duration = time.Since(start)
	return res, nil
}

// killGroup sends SIGTERM to the process group pgid, then SIGKILL when the
// leader has not exited after killGrace, and returns the leader's wait error.
// The group is sent SIGKILL in the end anyway so no descendant survives.
func killGroup(pgid int, waited <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case err := <-waited:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return err
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-waited
	}
}

// result turns a finished process state into an ExecResult.
func result(ps *os.ProcessState, waitErr error) backend.ExecResult {
	if ps == nil {
		return backend.ExecResult{ExitCode: -1}
	}
	res := backend.ExecResult{ExitCode: ps.ExitCode()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = -1
		res.Signal = signalName(ws.Signal())
	}
	_ = waitErr // exec.ErrWaitDelay: a leftover process held the pipe; the exit status is still valid
	return res
}

// signalName returns the conventional SIGxxx name of sig.
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
		syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
		syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// lockedWriter serializes writes from the stdout and stderr copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close kills the environment's background processes.
func (e *Environment) Close() error {
	e.mu.Lock()
	procs := e.procs
	e.procs = map[*process]bool{}
	e.mu.Unlock()
	for p := range procs {
		_ = p.Kill()
	}
	return nil
}

func expandHome(path, home string) string {
	if home == "" {
		return path
	}
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}

func lookup(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}
