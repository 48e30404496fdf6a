package vercel

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	maxStdin          = 16 << 20
	killGrace         = 2 * time.Second
)

// noWorkdir is printed on stderr by the wrapper when the working
// directory does not exist.
const noWorkdir = "HERMES_VERCEL_NO_WORKDIR"

// Environment is one task's sandbox.
type Environment struct {
	b       *Backend
	api     *client
	task    string
	sid     string
	workdir string

	mu       sync.Mutex
	procs    map[*process]bool
	extended time.Time
	closed   bool
}

// Workdir is the sandbox's working directory (/vercel/sandbox).
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

// keepAlive extends the sandbox's timeout while it is in use (never
// shortening it): once half the lifetime has passed since the last
// extension.
func (e *Environment) keepAlive(ctx context.Context) {
	e.mu.Lock()
	due := time.Since(e.extended) > e.b.cfg.Lifetime/2
	if due {
		e.extended = time.Now()
	}
	e.mu.Unlock()
	if due {
		_ = e.api.extend(ctx, e.sid, e.b.cfg.Lifetime)
	}
}

// script wraps a command: report the shell's pid on stderr, enter the
// workdir, set the environment, run the command with stderr merged into
// stdout (the order a person reads), stdin from stdinFile when given.
func (e *Environment) script(req backend.ExecRequest, stdinFile string) string {
	var b strings.Builder
	b.WriteString(`echo "$$" >&2; cd -- ` + shellfs.Quote(e.abs(req.Workdir)) + ` 2>/dev/null || { echo ` + noWorkdir + ` >&2; exit 127; }; `)
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
	in := "/dev/null"
	if stdinFile != "" {
		in = stdinFile
	}
	// A command killed by signal N exits the wrapper with 128+N, which
	// finish reports as that signal.
	b.WriteString("sh -c " + shellfs.Quote(req.Command) + " < " + shellfs.Quote(in) + " 2>&1; s=$?")
	if stdinFile != "" {
		b.WriteString("; rm -f -- " + shellfs.Quote(stdinFile))
	}
	b.WriteString("; exit $s")
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

// process is a command in the sandbox.
type process struct {
	*backend.Lifecycle // Kill ends the command's process tree
	env                *Environment
	cmdID              string
	pid                int
	noWorkdir          bool
	timedOut           atomic.Bool
}

// launch starts req and reads its log stream in the background.
func (e *Environment) launch(ctx context.Context, req backend.ExecRequest, out *backend.Capture) (*process, error) {
	e.keepAlive(ctx)
	stdinFile := ""
	if req.Stdin != nil {
		data, err := io.ReadAll(io.LimitReader(req.Stdin, maxStdin+1))
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		if len(data) > maxStdin {
			return nil, fmt.Errorf("stdin over %d MiB: the Vercel Sandbox API takes input as a file", maxStdin>>20)
		}
		var id [6]byte
		_, _ = rand.Read(id[:])
		stdinFile = "/tmp/.hermes-stdin-" + hex.EncodeToString(id[:])
		if err := e.putFile(ctx, stdinFile, data, 0o600); err != nil {
			return nil, err
		}
	}
	cmd, stream, body, err := e.api.startCmd(ctx, e.sid, cmdRequest{Command: "sh", Args: []string{"-c", e.script(req, stdinFile)},
		Cwd: "/", Wait: true})
	if err != nil {
		return nil, fmt.Errorf("run in Vercel sandbox %s: %w", e.sid, err)
	}
	p := &process{Lifecycle: backend.NewLifecycle(out, nil, time.Now()), env: e, cmdID: cmd.ID}
	var w io.Writer = out
	if req.Output != nil {
		w = io.MultiWriter(out, req.Output)
	}
	pidSeen := make(chan struct{})
	go p.read(stream, body, w, pidSeen)
	select {
	case <-pidSeen:
	case <-p.Exited():
	case <-ctx.Done():
		_ = p.Kill()
		return nil, ctx.Err()
	}
	go p.watch(req.Timeout)
	return p, nil
}

// read consumes the ndjson stream: stdout to w, the first stderr line is
// the pid, the last record the exit code.
func (p *process) read(stream *bufio.Reader, body io.Closer, w io.Writer, pidSeen chan struct{}) {
	defer body.Close()
	var stderr strings.Builder
	exit := -1
	sawPid := false
	for {
		line, err := stream.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec struct {
				Stream  string          `json:"stream"`
				Data    json.RawMessage `json:"data"`
				Command *command        `json:"command"`
			}
			if json.Unmarshal(line, &rec) == nil {
				var text string
				_ = json.Unmarshal(rec.Data, &text)
				switch {
				case rec.Command != nil && rec.Command.ExitCode != nil:
					exit = *rec.Command.ExitCode
				case rec.Stream == "stdout":
					_, _ = io.WriteString(w, text)
				case rec.Stream == "stderr":
					stderr.WriteString(text)
					if !sawPid {
						if first, _, ok := strings.Cut(stderr.String(), "\n"); ok {
							p.pid, _ = strconv.Atoi(strings.TrimSpace(first))
							sawPid = true
							close(pidSeen)
						}
					}
				case rec.Stream == "error":
					_, _ = io.WriteString(w, "\n[Vercel Sandbox: "+string(rec.Data)+"]\n")
				}
			}
		}
		if err != nil {
			break
		}
	}
	p.noWorkdir = strings.Contains(stderr.String(), noWorkdir)
	p.finish(exit)
	if !sawPid {
		close(pidSeen)
	}
}

func (p *process) finish(exit int) {
	res := backend.ExecResult{ExitCode: exit, TimedOut: p.timedOut.Load()}
	if exit > 128 && exit < 160 {
		res.ExitCode, res.Signal = -1, shellfs.SignalName(exit-128)
	}
	if p.KillRequested() && res.Signal == "" && exit != 0 {
		res.ExitCode, res.Signal = -1, "SIGTERM"
	}
	p.Finish(res)
	p.env.mu.Lock()
	delete(p.env.procs, p)
	p.env.mu.Unlock()
}

// watch ends the command's process tree on timeout or Kill.
func (p *process) watch(timeout time.Duration) {
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-p.Exited():
		return
	case <-expire:
		p.timedOut.Store(true)
	case <-p.Killed():
	}
	p.endTree()
}

// endTree sends SIGTERM to the command's shell and its descendants, then
// SIGKILL after killGrace.
func (p *process) endTree() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sig := range []string{"TERM", "KILL"} {
		if p.pid > 0 {
			_, _, _ = p.env.run(ctx, shellfs.KillTreeCommand(p.pid, sig))
		} else {
			_ = p.env.api.kill(ctx, p.env.sid, p.cmdID, map[string]int{"TERM": 15, "KILL": 9}[sig])
		}
		select {
		case <-p.Exited():
			return
		case <-time.After(killGrace):
		}
	}
}

// run runs a helper command to completion: combined output and exit code.
func (e *Environment) run(ctx context.Context, script string) ([]byte, int, error) {
	_, stream, body, err := e.api.startCmd(ctx, e.sid, cmdRequest{Command: "sh", Args: []string{"-c", script + " 2>&1"}, Cwd: "/", Wait: true})
	if err != nil {
		return nil, 0, err
	}
	defer body.Close()
	var out bytes.Buffer
	exit := -1
	for {
		line, err := stream.ReadBytes('\n')
		var rec struct {
			Stream  string          `json:"stream"`
			Data    json.RawMessage `json:"data"`
			Command *command        `json:"command"`
		}
		if json.Unmarshal(bytes.TrimSpace(line), &rec) == nil {
			var text string
			_ = json.Unmarshal(rec.Data, &text)
			switch {
			case rec.Command != nil && rec.Command.ExitCode != nil:
				exit = *rec.Command.ExitCode
			case rec.Stream == "stdout" || rec.Stream == "stderr":
				out.WriteString(text)
			}
		}
		if err != nil {
			break
		}
	}
	if exit < 0 {
		return out.Bytes(), exit, errors.New("vercel_sandbox: API: command stream ended without an exit code")
	}
	return out.Bytes(), exit, nil
}

// Exec runs req to completion.
func (e *Environment) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	out := backend.NewCapture(execHeadMax, execTailMax)
	if req.DiscardOutput && req.Output != nil {
		out = backend.NewCapture(0, 0)
	}
	p, err := e.launch(ctx, req, out)
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
		return backend.ExecResult{}, fmt.Errorf("workdir %s does not exist in the sandbox", e.abs(req.Workdir))
	}
	return p.Result(), ctx.Err()
}

// Start runs req in the background. The Sandbox API has no stdin for a
// running command: req.Stdin is passed as a file, and Write fails.
func (e *Environment) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	p, err := e.launch(ctx, req, backend.NewCapture(backgroundHeadMax, backgroundTailMax))
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

// Close snapshots a persistent sandbox (which stops it) or stops it; no
// process survives either.
func (e *Environment) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if e.b.cfg.Persistent {
		id, err := e.api.snapshot(ctx, e.sid)
		if err == nil {
			err = e.b.saveSnapshot(e.task, id)
		}
		if err != nil {
			_ = e.api.stop(ctx, e.sid)
			return fmt.Errorf("snapshot Vercel sandbox %s of task %s: %w", e.sid, e.task, err)
		}
		return nil
	}
	return e.api.stop(ctx, e.sid)
}

// PID is the command's shell pid in the sandbox.
func (p *process) PID() int { return p.pid }

// Write fails: the Sandbox API cannot feed a running command.
func (p *process) Write([]byte) (int, error) {
	return 0, errors.New("the vercel_sandbox backend cannot write to a running command (the Sandbox API has no stdin); pass the input in a file")
}

// CloseStdin does nothing: the command's stdin is /dev/null or a file.
func (p *process) CloseStdin() error { return nil }

// ReadFile reads a file through /fs/read.
func (e *Environment) ReadFile(ctx context.Context, p string) ([]byte, error) {
	full := e.abs(p)
	data, ok, err := e.api.readFile(ctx, e.sid, full)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: full, Err: fs.ErrNotExist}
	}
	return data, nil
}

// WriteFile uploads to a temporary name beside p through /fs/write, then
// renames it over p, so readers never see half a file.
func (e *Environment) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	full := e.abs(p)
	var id [6]byte
	_, _ = rand.Read(id[:])
	tmp := path.Join(path.Dir(full), ".hermes-write-"+hex.EncodeToString(id[:]))
	if err := e.putFile(ctx, tmp, data, perm); err != nil {
		return err
	}
	out, code, err := e.run(ctx, "mv -f -- "+shellfs.Quote(tmp)+" "+shellfs.Quote(full))
	if err != nil {
		return err
	}
	if code != 0 {
		_, _, _ = e.run(ctx, "rm -f -- "+shellfs.Quote(tmp))
		return fmt.Errorf("write %s: %s", full, strings.TrimSpace(string(out)))
	}
	return nil
}

// putFile writes one file (and its parent directories) with /fs/write.
func (e *Environment) putFile(ctx context.Context, full string, data []byte, perm fs.FileMode) error {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	rel := strings.TrimPrefix(path.Clean(full), "/")
	dirs := strings.Split(path.Dir(rel), "/")
	for i := range dirs {
		if dirs[0] == "." {
			break
		}
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(dirs[:i+1], "/") + "/", Mode: 0o755})
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(perm.Perm()), Size: int64(len(data))}); err != nil {
		return err
	}
	_, _ = tw.Write(data)
	_ = tw.Close()
	_ = gz.Close()
	if err := e.api.writeTar(ctx, e.sid, "/", buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	return nil
}

// Stat describes one file.
func (e *Environment) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.run(ctx, shellfs.StatCommand(full))
	if err != nil {
		return backend.FileInfo{}, err
	}
	if code != 0 {
		return backend.FileInfo{}, &fs.PathError{Op: "stat", Path: full, Err: fs.ErrNotExist}
	}
	return shellfs.ParseStat(full, string(out))
}

// ReadDir lists a directory.
func (e *Environment) ReadDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.run(ctx, shellfs.ReadDirCommand(full))
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, &fs.PathError{Op: "list", Path: full, Err: fs.ErrNotExist}
	}
	return shellfs.ParseReadDir(full, string(out))
}
