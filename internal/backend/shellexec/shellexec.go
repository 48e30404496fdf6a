// Package shellexec is a backend.Environment for backends that can start
// a POSIX shell program on the other side and stream its stdin, stdout and
// stderr: ssh (a session per command) and docker (`docker exec -i`). The
// transport starts programs; this package turns commands into programs,
// tracks them, ends their process trees on timeout, Kill and Close, and
// does file operations with small shell programs (package shellfs).
//
// Each command runs through a wrapper that enters the workdir (a missing
// one is an error, not a run elsewhere), exports the request's
// environment, starts the command with setsid (when the image has it) as
// the leader of its own process group with stderr merged into stdout (the
// order a person sees), reports that group's id on stderr and waits for
// it. Timeouts, Kill and Close signal the group from a second program.
package shellexec

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/shellfs"
)

// Output kept in memory per command, as the local backend keeps it.
const (
	execHeadMax       = 8 << 20
	execTailMax       = 8 << 20
	backgroundHeadMax = 64 << 10
	backgroundTailMax = 1 << 20
	killGrace         = 2 * time.Second
)

// noWorkdir is printed on stderr by the wrapper when the working
// directory does not exist; pgidPrefix comes before the command's process
// group id there. Lines before them are the remote shell's own (a
// .bashrc that prints, read by bash under sshd: pyenv's rehash did) and
// are skipped.
const (
	noWorkdir  = "HERMES_NO_WORKDIR"
	pgidPrefix = "HERMES_PGID="
)

// Transport starts shell programs on the other side.
type Transport interface {
	// Start runs script with sh -c. stdin nil with pipe false gives the
	// program an empty stdin; pipe true returns a writer for it.
	Start(ctx context.Context, script string, stdin io.Reader, pipe bool, stdout, stderr io.Writer) (Running, error)
}

// Running is a started program.
type Running interface {
	// Stdin is the program's stdin when Start was asked for a pipe.
	Stdin() io.WriteCloser
	// Wait returns the exit code, or the signal's name ("SIGKILL") with
	// exit -1; err is for a broken transport.
	Wait() (exit int, signal string, err error)
	// Abandon stops waiting for the program (closes the session or the
	// local client process); the program may still run.
	Abandon()
}

// Environment runs a task's commands through a Transport.
type Environment struct {
	tr      Transport
	task    string
	workdir string
	// Where names the other side in errors ("ssh host:22", "container x").
	where string

	mu    sync.Mutex
	procs map[*process]bool
}

// New returns an environment whose commands start in workdir (absolute).
func New(tr Transport, task, workdir, where string) *Environment {
	return &Environment{tr: tr, task: task, workdir: workdir, where: where, procs: map[*process]bool{}}
}

// Workdir is the default working directory.
func (e *Environment) Workdir() string { return e.workdir }

func (e *Environment) abs(p string) string {
	if p == "" {
		return e.workdir
	}
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(e.workdir, p)
}

// Run runs a helper program to completion and returns its combined output
// and exit code.
func (e *Environment) Run(ctx context.Context, script string, stdin io.Reader) ([]byte, int, error) {
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	r, err := e.tr.Start(ctx, script, stdin, false, w, w)
	if err != nil {
		return nil, 0, err
	}
	type result struct {
		exit int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		exit, _, err := r.Wait()
		done <- result{exit, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, 0, res.err
		}
		return out.Bytes(), res.exit, nil
	case <-ctx.Done():
		r.Abandon()
		return nil, 0, ctx.Err()
	}
}

// script wraps req's command (see the package comment).
func (e *Environment) script(req backend.ExecRequest) string {
	var b strings.Builder
	b.WriteString(`cd -- ` + shellfs.Quote(e.abs(req.Workdir)) + ` 2>/dev/null || { echo ` + noWorkdir + ` >&2; exit 127; }; `)
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
			b.WriteString("export " + k + "=" + shellfs.Quote(env[k]) + "; ")
		}
	}
	// An asynchronous command's stdin would be /dev/null: fd 3 carries it.
	cmd := "sh -c " + shellfs.Quote(req.Command) + " 2>&1 <&3 3<&- &"
	b.WriteString("exec 3<&0; if command -v setsid >/dev/null 2>&1; then setsid " + cmd + " else " + cmd + " fi; ")
	b.WriteString(`echo "` + pgidPrefix + `$!" >&2; exec 3<&-; wait "$!"`)
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

// process is a command running on the other side.
type process struct {
	*backend.Lifecycle // Kill ends the command's process tree
	env                *Environment
	run                Running
	pid                int
	noWorkdir          bool
}

// launch starts req; the returned process knows its pid.
func (e *Environment) launch(ctx context.Context, req backend.ExecRequest, out *backend.Capture, writable bool) (*process, error) {
	var w io.Writer = out
	if req.Output != nil {
		w = io.MultiWriter(out, req.Output)
	}
	pr, pw := io.Pipe()
	r, err := e.tr.Start(ctx, e.script(req), req.Stdin, req.Stdin == nil && writable, &lockedWriter{w: w}, pw)
	if err != nil {
		pw.Close()
		return nil, fmt.Errorf("%s: start %q: %w", e.where, req.Command, err)
	}
	p := &process{Lifecycle: backend.NewLifecycle(out, r.Stdin(), time.Now()), env: e, run: r}
	lines := bufio.NewReader(pr)
	pidLine := make(chan string, 2)
	go func() {
		sent := false
		for {
			line, err := lines.ReadString('\n')
			line = strings.TrimSpace(line)
			if line == noWorkdir || strings.HasPrefix(line, pgidPrefix) {
				pidLine <- line
				if sent {
					break
				}
				sent = true
			}
			if err != nil {
				break
			}
		}
		if !sent {
			pidLine <- ""
		}
		_, _ = io.Copy(io.Discard, lines)
		close(pidLine)
	}()
	select {
	case line := <-pidLine:
		p.pid, _ = strconv.Atoi(strings.TrimPrefix(line, pgidPrefix))
		p.noWorkdir = line == noWorkdir
	case <-ctx.Done():
		r.Abandon()
		pw.Close()
		return nil, ctx.Err()
	}
	if p.pid <= 0 && !p.noWorkdir {
		r.Abandon()
		pw.Close()
		return nil, fmt.Errorf("%s: the shell did not start the command", e.where)
	}
	go p.wait(req.Timeout, pw, pidLine)
	return p, nil
}

// wait collects the exit status, ending the tree on timeout or Kill.
func (p *process) wait(timeout time.Duration, stderr io.Closer, stderrLines <-chan string) {
	type status struct {
		exit   int
		signal string
		err    error
	}
	waited := make(chan status, 1)
	go func() {
		exit, sig, err := p.run.Wait()
		waited <- status{exit, sig, err}
	}()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	var st status
	timedOut := false
	select {
	case st = <-waited:
	case <-expire:
		timedOut = true
		p.endTree(func() bool { return len(waited) > 0 })
		st = <-waited
	case <-p.Killed():
		p.endTree(func() bool { return len(waited) > 0 })
		st = <-waited
	}
	stderr.Close()
	res := backend.ExecResult{ExitCode: st.exit, Signal: st.signal, TimedOut: timedOut}
	if st.err != nil {
		res.ExitCode = -1
	}
	if res.Signal == "" && res.ExitCode > 128 && res.ExitCode < 160 {
		res.ExitCode, res.Signal = -1, shellfs.SignalName(res.ExitCode-128)
	}
	for line := range stderrLines {
		p.noWorkdir = p.noWorkdir || line == noWorkdir
	}
	p.Finish(res)
	p.env.mu.Lock()
	delete(p.env.procs, p)
	p.env.mu.Unlock()
}

// endTree sends SIGTERM to the command's process group from a second
// program, then SIGKILL after killGrace, until exited reports true.
func (p *process) endTree(exited func() bool) {
	if p.pid <= 0 {
		p.run.Abandon()
		return
	}
	for _, sig := range []string{"TERM", "KILL"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, _ = p.env.Run(ctx, shellfs.KillGroupCommand(p.pid, sig), nil)
		cancel()
		for deadline := time.Now().Add(killGrace); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if exited() {
				return
			}
		}
	}
	p.run.Abandon()
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
	case <-p.Exited():
	case <-ctx.Done():
		_ = p.Kill()
	}
	if p.noWorkdir {
		return backend.ExecResult{}, fmt.Errorf("workdir %s does not exist (%s)", e.abs(req.Workdir), e.where)
	}
	return p.Result(), ctx.Err()
}

// Start runs req in the background; without req.Stdin, Write feeds it.
func (e *Environment) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	p, err := e.launch(ctx, req, backend.NewCapture(backgroundHeadMax, backgroundTailMax), true)
	if err != nil {
		return nil, err
	}
	e.track(p)
	return p, nil
}

func (e *Environment) track(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !p.Done() {
		e.procs[p] = true
	}
}

// Close ends the environment's running commands (their process trees).
// What a finished command detached (`nohup server &`) is not tracked;
// the backend decides whether it survives (a container removed with the
// task ends it; a remote host keeps it).
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

// PID is the command's shell pid on the other side.
func (p *process) PID() int { return p.pid }

// ReadFile returns the file's bytes.
func (e *Environment) ReadFile(ctx context.Context, p string) ([]byte, error) {
	full := e.abs(p)
	var out, errOut bytes.Buffer
	r, err := e.tr.Start(ctx, "cat -- "+shellfs.Quote(full), nil, false, &out, &errOut)
	if err != nil {
		return nil, err
	}
	exit, _, err := r.Wait()
	if err != nil {
		return nil, err
	}
	if exit != 0 {
		return nil, fileError("read", full, errOut.String())
	}
	return out.Bytes(), nil
}

// WriteFile replaces the file atomically (a temporary file in the same
// directory renamed over it), creating parent directories.
func (e *Environment) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	full := e.abs(p)
	out, code, err := e.Run(ctx, shellfs.WriteAtomicCommand(full, perm), bytes.NewReader(data))
	if err != nil {
		return err
	}
	if code != 0 {
		return fileError("write", full, string(out))
	}
	return nil
}

// Stat describes one file (symlinks followed).
func (e *Environment) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.Run(ctx, shellfs.StatCommand(full), nil)
	if err != nil {
		return backend.FileInfo{}, err
	}
	if code != 0 {
		return backend.FileInfo{}, &fs.PathError{Op: "stat", Path: full, Err: fs.ErrNotExist}
	}
	return shellfs.ParseStat(full, string(out))
}

// ReadDir lists a directory (without . and ..), sorted by name.
func (e *Environment) ReadDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.Run(ctx, shellfs.ReadDirCommand(full), nil)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, &fs.PathError{Op: "list", Path: full, Err: fs.ErrNotExist}
	}
	return shellfs.ParseReadDir(full, string(out))
}

func fileError(op, p, stderr string) error {
	msg := strings.TrimSpace(stderr)
	if msg == "" || strings.Contains(msg, "No such file") {
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	return fmt.Errorf("%s %s: %s", op, p, msg)
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
