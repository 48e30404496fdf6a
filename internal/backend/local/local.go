// Package local is the "local" terminal backend of Hermes Agent
// ("terminal-backends.md"): commands and file operations run directly on
// the host, in the configured working directory, with the agent's own
// secrets scrubbed from the command environment. Under the approvals, a
// kernel-enforced guard (terminal.local_sandbox, guard.go) confines every
// command with Landlock, and a supervisor process (supervisor.go) ends
// the commands' process groups when hermes dies.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	guard       *guard
	sup         *supervisor

	envs *backend.TaskEnvs[*Environment]
}

// New returns a local backend whose commands start in cwd (terminal.cwd;
// "" or "." means the current directory of this process; "~" is expanded
// from HOME in environ). passthrough lists variable names kept in the
// command environment even though they look secret
// (terminal.env_passthrough). environ returns the host environment as
// "NAME=value" entries; nil means os.Environ. The error names terminal.cwd
// when the directory does not exist.
//
// New runs commands unconfined (SandboxOff) and without a supervisor;
// hermes itself uses NewWithOptions.
func New(cwd string, passthrough []string, environ func() []string) (*Backend, error) {
	return NewWithOptions(Options{Cwd: cwd, Passthrough: passthrough, Environ: environ, Sandbox: SandboxOff})
}

// Options configure a local backend.
type Options struct {
	Cwd         string          // terminal.cwd, as for New
	Passthrough []string        // terminal.env_passthrough
	Environ     func() []string // host environment; nil = os.Environ
	// Sandbox is terminal.local_sandbox; "" means SandboxWorkspaceWrite.
	Sandbox Sandbox
	// WritablePaths are terminal.writable_paths: absolute or "~/" paths
	// writable under SandboxWorkspaceWrite besides the workspace and the
	// temp dir. Paths inside HERMES_HOME stay read-only.
	WritablePaths []string
	// HermesHome is HERMES_HOME: never writable by a command, and its
	// protected entries (IsProtectedName) never readable.
	HermesHome string
	// Supervise starts the supervisor (a /bin/sh process) that ends the
	// commands' process groups when hermes dies, even by SIGKILL.
	Supervise bool
	// Warn receives the one-line notice that the kernel lacks Landlock;
	// nil = os.Stderr.
	Warn io.Writer
	// ProtectedPaths are terminal.protected_paths (protect.Defaults() in
	// hermes's config): workspace-relative paths commands may not write
	// under SandboxWorkspaceWrite (protected.go); nil = none.
	ProtectedPaths []string
	// PIDInit is the hermes binary (os.Executable), which runs
	// PIDInitMain when given PIDInitArg: as root, the commands then share a
	// PID namespace with a /proc of their own (pidns.go). "" = commands
	// see the host's /proc.
	PIDInit string
	// LandlockABI overrides the kernel's Landlock ABI when > 0, or
	// pretends there is none when < 0 (tests of the fallback).
	LandlockABI int
}

// NewWithOptions returns a local backend confined as o says. When the
// sandbox is on but the kernel has no Landlock, it says so once on o.Warn
// and runs commands unconfined (the approvals remain).
func NewWithOptions(o Options) (*Backend, error) {
	environ := o.Environ
	if environ == nil {
		environ = os.Environ
	}
	env := environ()
	dir, err := resolveCwd(o.Cwd, env)
	if err != nil {
		return nil, err
	}
	mode := o.Sandbox
	if mode == "" {
		mode = SandboxWorkspaceWrite
	}
	abi := o.LandlockABI
	if abi == 0 && mode != SandboxOff {
		abi = landlockABI()
	}
	if mode != SandboxOff && abi <= 0 {
		warn := o.Warn
		if warn == nil {
			warn = os.Stderr
		}
		fmt.Fprintf(warn, "hermes: warning: this kernel has no Landlock, so terminal.local_sandbox %s is not enforced; only the approvals guard local commands (use terminal.backend: box, or a kernel >= 5.13 with lsm=landlock)\n", mode)
	}
	writable := []string{dir, tempDir(env)}
	for _, p := range o.WritablePaths {
		p = expandHome(p, lookup(env, "HOME"))
		if filepath.IsAbs(p) {
			writable = append(writable, p)
		}
	}
	g := newGuard(mode, max(abi, 0), o.HermesHome, writable)
	warn := o.Warn
	if warn == nil {
		warn = os.Stderr
	}
	g.setProtected(o.ProtectedPaths, dir, hasSysAdmin(), warn)
	if o.PIDInit != "" && mode != SandboxOff && hasSysAdmin() {
		g.pids = newPIDKeeper(o.PIDInit)
	}
	return &Backend{cwd: dir, passthrough: o.Passthrough, environ: environ, guard: g,
		sup: newSupervisor(supervisorShell(o.Supervise)), envs: backend.NewTaskEnvs[*Environment]("local")}, nil
}

// supervisorShell is /bin/sh when supervision is wanted, else "".
func supervisorShell(want bool) string {
	if want {
		return "/bin/sh"
	}
	return ""
}

// tempDir is TMPDIR from environ, else /tmp.
func tempDir(environ []string) string {
	if t := lookup(environ, "TMPDIR"); filepath.IsAbs(t) {
		return t
	}
	return "/tmp"
}

// Confined reports whether commands run under a Landlock ruleset, and
// with which terminal.local_sandbox mode.
func (b *Backend) Confined() (Sandbox, bool) { return b.guard.mode, b.guard.active() }

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
	return b.envs.Open(taskID, func() (*Environment, error) {
		kept, _ := ScrubEnv(b.environ(), b.passthrough)
		if taskID != "" {
			kept = append(kept, "HERMES_SESSION_ID="+taskID)
		}
		return &Environment{workdir: b.cwd, env: kept, home: lookup(kept, "HOME"), procs: map[*process]bool{},
			guard: b.guard, sup: b.sup, hermesHome: b.guard.hermesHome}, nil
	})
}

// Close kills every running command of every environment and, as root,
// every process the commands detached (their PID namespace ends with its
// keeper), then checks the workspace a last time (protect.Watch): a
// detached writer may have rewritten .git/config after the last
// command's check. Without root a detached process may outlive hermes.
func (b *Backend) Close() error {
	errs := []error{b.envs.Close()}
	errs = append(errs, b.sup.stop())
	b.guard.pids.kill()
	b.guard.finalCheck()
	b.guard.close()
	return errors.Join(errs...)
}

// Environment is one task's view of the host.
type Environment struct {
	workdir string
	env     []string // scrubbed base environment
	home    string
	guard   *guard
	sup     *supervisor
	// hermesHome is HERMES_HOME with symlinks resolved ("" = none): the
	// file operations refuse its protected entries by identity.
	hermesHome string

	mu    sync.Mutex
	procs map[*process]bool
}

var _ backend.Environment = (*Environment)(nil)

// DialUnix implements backend.UnixDialer: commands share the host's file
// systems, so the socket is dialled directly.
func (e *Environment) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("dial %q: not an absolute path", path)
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

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
	// Own process group, so a timeout or Kill reaches every descendant;
	// the leader dies with the thread that forked it (guard.start), and the
	// supervisor ends the rest of the group when hermes dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
	out := backend.NewCapture(execHeadMax, execTailMax)
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
	if req.Stdin != nil {
		if err := feedStdin(cmd, req.Stdin); err != nil {
			return backend.ExecResult{ExitCode: -1}, err
		}
	}
	cmd.WaitDelay = outputDrainDelay
	start := time.Now()
	release, err := e.startCmd(cmd)
	if err != nil {
		return backend.ExecResult{ExitCode: -1}, err
	}
	defer release()
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
	if note := e.guard.checkWorkspace(); note != "" && out != nil {
		res.Output = append(res.Output, "\n"+note+"\n"...)
	}
	res.TimedOut = timedOut
	res.Duration = time.Since(start)
	return res, nil
}

// startCmd starts cmd under the guard and registers its process group
// with the supervisor. The returned release unregisters it and frees the
// guard's thread; call it once the command has exited.
func (e *Environment) startCmd(cmd *exec.Cmd) (release func(), err error) {
	g := e.guard
	if g == nil {
		g = newGuard(SandboxOff, 0, "", nil)
	}
	// The supervisor starts with the first command (in the background,
	// while the guard starts it), not with the environment: a turn whose
	// tools run no command pays for no /bin/sh.
	if e.sup != nil {
		e.sup.start()
	}
	rel, err := g.start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	e.sup.add(pid)
	return func() {
		e.sup.remove(pid)
		rel()
	}, nil
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

// Close kills the environment's background processes (their whole
// process groups). Processes a finished command detached (`nohup server
// &`) keep running, as they would after the shell on the host: the agent
// may have started a dev server on purpose. They are ended when hermes
// exits only if their group was still registered with the supervisor,
// or, as root, with the commands' PID namespace (Backend.Close). The
// workspace is checked once more (protect.Watch), the note going to the
// person.
func (e *Environment) Close() error {
	e.mu.Lock()
	procs := e.procs
	e.procs = map[*process]bool{}
	e.mu.Unlock()
	for p := range procs {
		_ = p.Kill()
	}
	e.guard.finalCheck() // the session's last word on the workspace
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
