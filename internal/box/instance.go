package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/httpguard"
	"github.com/hermes-go/hermes/internal/protect"
)

// maxCapturedOutput caps ExecResult.Output (the Output writer still sees
// everything).
const maxCapturedOutput = 16 << 20

// startTimeout bounds how long a box may take to build its root.
const startTimeout = 30 * time.Second

// ErrBoxStopped is returned by operations on a box whose init has ended
// (it was closed, or it died).
var ErrBoxStopped = errors.New("box stopped")

// Box is one running box: its init process, control connection, cgroup
// and egress session. All methods are safe for concurrent use.
type Box struct {
	task     string
	stateDir string
	workdir  string
	shell    string
	env      []string
	spec     wire.InitSpec
	// watch: the bind workspace as the box started; after each command
	// the host moves aside what is new and runs code (protect.Watch).
	watch   *protect.Watch
	persist bool
	initPID int
	cmd     *exec.Cmd // nil when attached
	fc      *wire.Conn
	// attachPath is the attach socket of a box another process runs, which
	// this Box reached through it (Attach); "" for the owner's Box.
	attachPath string
	conns      *net.UnixConn
	cg         cgroup.Group // nil when attached and the group was not found
	egress     *egress.BoxSession
	lock       *os.File
	ctx        context.Context
	cancel     context.CancelFunc
	nextID     atomic.Uint64
	oomKnown   atomic.Int64  // the box's OOM-kill counter when last read
	died       chan struct{} // closed when the control connection ends
	initDone   chan struct{} // closed when the init has exited and initState is set
	initState  *os.ProcessState
	closing    atomic.Bool // Close has begun: the init's end is not news
	phases     StartPhases
	refill     func() // makes the Manager's next spare (deferRefill); nil when there is none to make
	closeOnce  sync.Once
	closeErr   error
	userOnce   sync.Once     // imageRunAs (oci_user.go)
	user       *wire.Account // the image's User; nil = the box's root
	userErr    error

	mu        sync.Mutex
	handlers  map[uint64]func(wire.Response)
	dials     map[uint64]chan net.Conn
	listeners []net.Listener
	busy      int
	lastUsed  time.Time
	now       func() time.Time
	// attachedRunning is the number of commands attached processes run
	// in the box (wire.KindAttached; owner only); attachedChanged is closed
	// and replaced when it changes.
	attachedRunning int
	attachedChanged chan struct{}
}

// Task is the task id of the box.
func (b *Box) Task() string { return b.task }

// InitPID is the host pid of the box's init (PID 1 inside).
func (b *Box) InitPID() int { return b.initPID }

// Died is closed when the box has stopped: its init ended (killed, the
// kernel's OOM killer included) or its control connection closed.
func (b *Box) Died() <-chan struct{} { return b.died }

// DeathReason says how the init of a box that stopped by itself ended.
func (b *Box) DeathReason() string { return b.deathReason() }

// Workdir is the default working directory of commands.
func (b *Box) Workdir() string { return b.workdir }

// Shell is the box's shell: /bin/bash, or /bin/sh when it has no bash.
func (b *Box) Shell() string { return b.shell }

// StartPhases reports how long the phases of this box's start took.
func (b *Box) StartPhases() StartPhases { return b.phases }

// Stats reads the box's cgroup counters.
func (b *Box) Stats() (cgroup.Stats, error) {
	if b.cg == nil {
		return cgroup.Stats{}, fmt.Errorf("box %s: cgroup not found", b.task)
	}
	return b.cg.Stats()
}

// waitInit reaps the init (the only Wait of b.cmd once the box runs).
func (b *Box) waitInit() {
	b.cmd.Wait()
	b.initState = b.cmd.ProcessState
	close(b.initDone)
}

// deathReason says how the init ended, for a box that stopped without
// being closed (waiting a moment for the exit status: the control socket
// closes as the init dies).
func (b *Box) deathReason() string {
	if b.Attached() {
		return "the hermes process that runs the box stopped it (or its init ended)"
	}
	select {
	case <-b.initDone:
	case <-time.After(2 * time.Second):
		return "the box's init stopped answering"
	}
	st := b.initState
	if st == nil {
		return "the box's init ended"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := unix.SignalName(ws.Signal())
		if ws.Signal() == syscall.SIGKILL {
			return "the box's init was killed by SIGKILL (by the host, or by the kernel's OOM killer: see terminal.container_memory)"
		}
		// Signals sent from inside the box are dropped (protectInit), so
		// this is a crash of the init itself.
		return fmt.Sprintf("the box's init died of %s (see %s)", sig, filepath.Join(b.stateDir, "init.log"))
	}
	return fmt.Sprintf("the box's init exited with status %d (see %s)", st.ExitCode(), filepath.Join(b.stateDir, "init.log"))
}

// run reads response frames until the control socket closes, then fails
// every outstanding request with ErrBoxStopped.
func (b *Box) run() {
	defer func() {
		close(b.died)
		b.mu.Lock()
		hs := b.handlers
		b.handlers = map[uint64]func(wire.Response){}
		b.mu.Unlock()
		for id, h := range hs {
			h(wire.Response{ID: id, Kind: wire.KindError, Err: ErrBoxStopped.Error()})
		}
	}()
	for {
		var r wire.Response
		if err := b.fc.Receive(&r); err != nil {
			return
		}
		if r.ID == 0 && r.Kind == wire.KindAttached {
			b.noteAttached(r.PID)
			continue
		}
		b.mu.Lock()
		h := b.handlers[r.ID]
		if r.Kind == wire.KindExit || r.Kind == wire.KindError || r.Kind == wire.KindOK {
			delete(b.handlers, r.ID)
		}
		b.mu.Unlock()
		if h != nil {
			h(r)
		}
	}
}

// runConns receives the sockets the init hands over: egress connections
// (id 0) go to the egress session, dialled ones to their waiter.
func (b *Box) runConns() {
	for {
		id, c, err := wire.ReceiveConn(b.conns)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-b.died:
				return
			default:
				continue
			}
		}
		if id == 0 {
			if b.egress == nil {
				c.Close()
				continue
			}
			go b.egress.ServeConn(b.ctx, c)
			continue
		}
		b.mu.Lock()
		ch := b.dials[id]
		delete(b.dials, id)
		b.mu.Unlock()
		if ch == nil {
			c.Close()
			continue
		}
		ch <- c
	}
}

// call registers h for a new request id, then sends the request.
func (b *Box) call(req wire.Request, h func(wire.Response)) (uint64, error) {
	req.ID = b.nextID.Add(1)
	b.mu.Lock()
	select {
	case <-b.died:
		b.mu.Unlock()
		return 0, ErrBoxStopped
	default:
	}
	b.handlers[req.ID] = h
	b.mu.Unlock()
	if err := b.fc.Send(req); err != nil {
		b.mu.Lock()
		delete(b.handlers, req.ID)
		b.mu.Unlock()
		return 0, fmt.Errorf("box %s: %w (%v)", b.task, ErrBoxStopped, err)
	}
	return req.ID, nil
}

// roundTrip sends one request and waits for its single reply.
func (b *Box) roundTrip(ctx context.Context, req wire.Request) (wire.Response, error) {
	ch := make(chan wire.Response, 1)
	if _, err := b.call(req, func(r wire.Response) { ch <- r }); err != nil {
		return wire.Response{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return wire.Response{}, ctx.Err()
	}
}

func (b *Box) touch(delta int) {
	b.mu.Lock()
	b.busy += delta
	b.lastUsed = b.now()
	b.mu.Unlock()
}

// idleSince reports when the box was last used, and whether it is busy
// (attached processes' commands included).
func (b *Box) idleSince() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastUsed, b.busy > 0 || b.attachedRunning > 0
}

func (b *Box) abs(p string) string {
	if p == "" {
		return b.workdir
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(b.workdir, p)
}

// commandEnv is the box's base environment plus extra, as KEY=VALUE
// lines, sorted.
func (b *Box) commandEnv(extra map[string]string) []string {
	if len(extra) == 0 {
		return b.env
	}
	m := map[string]string{}
	for _, kv := range b.env {
		if i := bytes.IndexByte([]byte(kv), '='); i > 0 {
			m[kv[:i]] = kv[i+1:]
		}
	}
	for k, v := range extra {
		m[k] = v
	}
	return sortedEnv(m)
}

func sortedEnv(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Exec runs req to completion. A non-zero exit, a timeout or an OOM kill is
// a result; errors mean the box itself failed. When ctx ends first the
// command's tree is killed and ctx.Err() is returned with the output so far.
func (b *Box) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	p, err := b.start(ctx, req, false)
	if err != nil {
		return backend.ExecResult{}, err
	}
	res, err := p.Wait(ctx)
	if note := b.watch.Check(); note != "" && err == nil {
		res.Output = append(res.Output, "\n"+note+"\n"...)
	}
	return res, err
}

// Start runs req in the background. Without req.Stdin the command reads
// what the caller sends with Write, until CloseStdin (backend.Process).
//
// When it ends, the workspace is checked as after Exec; the note goes to
// the person (protect.Watch.CheckForPerson), since nobody reads the
// process's output for it.
func (b *Box) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	p, err := b.start(ctx, req, req.Stdin == nil)
	if err != nil {
		return nil, err
	}
	if b.watch == nil {
		return p, nil
	}
	go func() {
		select {
		case <-p.done:
			b.watch.CheckForPerson()
		case <-b.died:
		}
	}()
	return p, nil
}

// start runs req; writable opens the command's stdin for Write even
// without req.Stdin (a foreground command without stdin reads /dev/null).
func (b *Box) start(ctx context.Context, req backend.ExecRequest, writable bool) (*boxProcess, error) {
	env := make(map[string]string, len(req.Env)+1)
	for k, v := range req.Env {
		env[k] = v
	}
	env[boxCommandVar] = req.Command
	req.Env = env
	return b.startArgv(ctx, []string{b.shell, "-c", boxCommandScript}, req, writable)
}

// The command a shell runs travels in the environment, not on its command
// line: host users who can list processes (ps, /proc/PID/cmdline) do not
// see what the model runs, while /proc/PID/environ is readable only by the
// box's owner. The variable is unset before the command runs.
const (
	boxCommandVar    = "HERMES_BOX_COMMAND"
	boxCommandScript = `__hermes_c=$` + boxCommandVar + `; unset ` + boxCommandVar + `; eval "$__hermes_c"`
)

// startArgv runs argv (no shell) with the workdir, environment, timeout,
// stdin and output of req.
func (b *Box) startArgv(ctx context.Context, argv []string, req backend.ExecRequest, writable bool) (*boxProcess, error) {
	p := &boxProcess{box: b, out: req.Output, errOut: req.Stderr, discard: req.Output != nil && req.DiscardOutput}
	spec := &wire.ExecSpec{Argv: argv, Dir: b.abs(req.Workdir),
		Env: b.commandEnv(req.Env), Timeout: req.Timeout, Stdin: req.Stdin != nil || writable, Stderr: req.Stderr != nil, RunAs: wireAccount(req.RunAs)}
	if spec.RunAs == nil {
		var err error
		if spec.RunAs, err = b.imageRunAs(ctx); err != nil {
			return nil, err
		}
	}
	return b.startSpec(ctx, spec, p, req.Stdin)
}

// startSpec sends spec and waits until the command runs (or failed to
// start); stdin, when set, is fed to it in the background.
func (b *Box) startSpec(ctx context.Context, spec *wire.ExecSpec, p *boxProcess, stdin io.Reader) (*boxProcess, error) {
	b.touch(1)
	p.done, p.started, p.began, p.argv0 = make(chan struct{}), make(chan struct{}), time.Now(), spec.Argv[0]
	p.credit = make(chan struct{}, wire.StdinWindow)
	p.oomBefore = b.oomKnown.Load()
	id, err := b.call(wire.Request{Op: wire.OpExec, Exec: spec}, p.handle)
	if err != nil {
		b.touch(-1)
		return nil, err
	}
	p.id = id
	select {
	case <-p.started:
	case <-p.done:
	case <-ctx.Done():
		b.fc.Send(wire.Request{ID: id, Op: wire.OpKill})
	}
	if p.startErr != nil {
		return nil, p.startErr
	}
	if stdin != nil {
		go backend.FeedStdin(p, stdin, stdinChunk)
	}
	return p, nil
}

// boxProcess is a command running in a box (backend.Process).
type boxProcess struct {
	box       *Box
	id        uint64
	argv0     string
	out       io.Writer
	errOut    io.Writer // standard error of a Command with Stderr, or nil
	discard   bool      // ExecRequest.DiscardOutput: keep nothing in buf
	began     time.Time
	oomBefore int64
	started   chan struct{}
	done      chan struct{}
	// credit holds a token per stdin frame sent and not yet acknowledged
	// by the init (wire.StdinWindow); a sender blocks while it is full.
	credit chan struct{}

	mu       sync.Mutex
	pid      int
	buf      bytes.Buffer
	result   backend.ExecResult
	startErr error
	waitErr  error // the box died under the command
}

func (p *boxProcess) handle(r wire.Response) {
	switch r.Kind {
	case wire.KindStarted:
		p.mu.Lock()
		p.pid = r.PID
		p.mu.Unlock()
		close(p.started)
	case wire.KindStdinAck:
		select {
		case <-p.credit:
		default:
		}
	case wire.KindOutput:
		p.mu.Lock()
		if room := maxCapturedOutput - p.buf.Len(); room > 0 && !p.discard {
			p.buf.Write(r.Data[:min(room, len(r.Data))])
		}
		p.mu.Unlock()
		if r.Stream == 2 && p.errOut != nil {
			p.errOut.Write(r.Data)
		} else if p.out != nil {
			p.out.Write(r.Data)
		}
	case wire.KindExit, wire.KindError:
		var died error
		if r.Kind == wire.KindError && r.Err == ErrBoxStopped.Error() && !p.box.closing.Load() {
			died = fmt.Errorf("box %s: %w: %s while the command ran (the next command starts the box afresh)",
				p.box.task, ErrBoxStopped, p.box.deathReason())
		}
		p.mu.Lock()
		if r.Kind == wire.KindError {
			err := fmt.Errorf("box %s: %s", p.box.task, r.Err)
			if r.Err == ErrBoxStopped.Error() {
				err = fmt.Errorf("box %s: %w", p.box.task, ErrBoxStopped)
			}
			select {
			case <-p.started:
				p.result.ExitCode, p.result.Signal = -1, "SIGKILL"
				p.waitErr = died
			default:
				p.startErr = err
				if r.ErrKind != "" {
					p.startErr = responseError(r, "exec", p.argv0)
				}
				if died != nil {
					p.startErr = died
				}
			}
		} else {
			p.result.ExitCode, p.result.Signal, p.result.TimedOut = r.Exit.Code, r.Exit.Signal, r.Exit.TimedOut
		}
		p.result.Duration = time.Since(p.began)
		if p.box.noteOOMKills() > p.oomBefore {
			p.result.OOMKilled = true
		}
		p.mu.Unlock()
		p.box.touch(-1)
		close(p.done)
		p.box.refillNow()
	}
}

// noteOOMKills reads the cgroup's OOM-kill counter (cheaply: see
// cgroup.OOMKills), records it as the box's known count and returns it.
// A command whose start saw a lower count was running during an OOM kill;
// like the counter, that is per box, not per process.
func (b *Box) noteOOMKills() int64 {
	if b.cg == nil {
		return b.oomKnown.Load()
	}
	n := b.cg.OOMKills()
	for {
		old := b.oomKnown.Load()
		if n <= old || b.oomKnown.CompareAndSwap(old, n) {
			return max(n, old)
		}
	}
}

// PID is the process id inside the box.
func (p *boxProcess) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Kill SIGKILLs the command, its session, process group and descendants.
func (p *boxProcess) Kill() error {
	if p.Done() {
		return nil
	}
	return p.box.fc.Send(wire.Request{ID: p.id, Op: wire.OpKill})
}

// Terminate asks the command to stop: SIGTERM to the processes its
// wrapper shell runs (or the shell, running nothing). Kill ends it for good.
func (p *boxProcess) Terminate() error {
	if p.Done() {
		return nil
	}
	return p.box.fc.Send(wire.Request{ID: p.id, Op: wire.OpTerm})
}

func (p *boxProcess) Wait(ctx context.Context) (backend.ExecResult, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Kill()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		res := p.snapshot()
		return res, ctx.Err()
	}
	p.mu.Lock()
	err := p.waitErr
	p.mu.Unlock()
	return p.snapshot(), err
}

func (p *boxProcess) snapshot() backend.ExecResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.result
	r.Output = append([]byte(nil), p.buf.Bytes()...)
	return r
}

func (p *boxProcess) Output() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.buf.Bytes()...)
}

func (p *boxProcess) Done() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (b *Box) fileCall(ctx context.Context, req wire.Request, op string) (wire.Response, error) {
	b.touch(1)
	defer b.touch(-1)
	r, err := b.roundTrip(ctx, req)
	if err != nil {
		return r, err
	}
	if r.Kind == wire.KindError {
		return r, responseError(r, op, req.Path)
	}
	return r, nil
}

// ReadFile returns the contents of path inside the box.
func (b *Box) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r, err := b.fileCall(ctx, wire.Request{Op: wire.OpReadFile, Path: b.abs(path)}, "read")
	return r.Data, err
}

// WriteFile replaces path inside the box atomically, creating parents.
func (b *Box) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	req := wire.Request{Op: wire.OpWriteFile, Path: b.abs(path), Data: data, Perm: uint32(perm.Perm())}
	if !b.Attached() {
		_, err := b.fileCall(ctx, req, "write")
		return err
	}
	// An attached connection takes frames of at most wire.MaxAttachFrame: the
	// data goes in parts, renamed into place after the last.
	for {
		n := min(len(data), wire.AttachWriteChunk)
		req.Data, req.More = data[:n], n < len(data)
		if _, err := b.fileCall(ctx, req, "write"); err != nil || !req.More {
			return err
		}
		data, req.Offset = data[n:], req.Offset+int64(n)
	}
}

func fromWire(w wire.FileInfo) backend.FileInfo {
	return backend.FileInfo{Name: w.Name, Size: w.Size, Mode: fs.FileMode(w.Mode), ModTime: w.ModTime, IsDir: w.IsDir}
}

// Stat describes path inside the box (following symlinks).
func (b *Box) Stat(ctx context.Context, path string) (backend.FileInfo, error) {
	r, err := b.fileCall(ctx, wire.Request{Op: wire.OpStat, Path: b.abs(path)}, "stat")
	if err != nil || r.Info == nil {
		return backend.FileInfo{}, err
	}
	return fromWire(*r.Info), nil
}

// ReadDir lists path inside the box, sorted by name.
func (b *Box) ReadDir(ctx context.Context, path string) ([]backend.FileInfo, error) {
	r, err := b.fileCall(ctx, wire.Request{Op: wire.OpReadDir, Path: b.abs(path)}, "readdir")
	if err != nil {
		return nil, err
	}
	out := make([]backend.FileInfo, 0, len(r.Infos))
	for _, w := range r.Infos {
		out = append(out, fromWire(w))
	}
	return out, nil
}

// DialBox opens a TCP connection to 127.0.0.1:port inside the box (the
// socket is created by the init in the box's network namespace).
func (b *Box) DialBox(ctx context.Context, port int) (net.Conn, error) {
	if b.Attached() {
		return b.dialAttached(ctx, port)
	}
	ch := make(chan net.Conn, 1)
	errc := make(chan error, 1)
	id := b.nextID.Add(1)
	b.mu.Lock()
	b.dials[id] = ch
	b.handlers[id] = func(r wire.Response) {
		if r.Kind == wire.KindError {
			errc <- fmt.Errorf("box %s: dial port %d: %s", b.task, port, r.Err)
		}
	}
	b.mu.Unlock()
	cleanup := func() {
		b.mu.Lock()
		delete(b.dials, id)
		delete(b.handlers, id)
		b.mu.Unlock()
	}
	if err := b.fc.Send(wire.Request{ID: id, Op: wire.OpDial, Port: port}); err != nil {
		cleanup()
		return nil, ErrBoxStopped
	}
	select {
	case c := <-ch:
		return c, nil
	case err := <-errc:
		cleanup()
		return nil, err
	case <-b.died:
		cleanup()
		return nil, ErrBoxStopped
	case <-ctx.Done():
		cleanup()
		return nil, ctx.Err()
	}
}

// Publish forwards host address hostAddr (e.g. "127.0.0.1:8080"; port 0
// picks one) to 127.0.0.1:boxPort inside the box, like BoxLite's ports=.
// It returns the listening address; the listener closes with the box.
func (b *Box) Publish(hostAddr string, boxPort int) (net.Addr, error) {
	if boxPort <= 0 || boxPort > 65535 {
		return nil, fmt.Errorf("box port %d out of range 1-65535", boxPort)
	}
	ln, err := httpguard.Bind(hostAddr) // 0.0.0.0 binds IPv4, as for every hermes listener
	if err != nil {
		return nil, fmt.Errorf("publish %s → box port %d: %w", hostAddr, boxPort, err)
	}
	b.mu.Lock()
	b.listeners = append(b.listeners, ln)
	b.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bc, err := b.DialBox(b.ctx, boxPort)
				if err != nil {
					return
				}
				defer bc.Close()
				pipeConns(c, bc)
			}()
		}
	}()
	return ln.Addr(), nil
}

// pipeConns copies both ways until both directions end.
func pipeConns(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

// Close stops the box: every process in it is killed (SIGKILL to PID 1
// ends the pid namespace; the cgroup is swept too), its mounts vanish with
// its mount namespace, and its writable layer is kept (persistent) or
// deleted.
func (b *Box) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.stop() })
	return b.closeErr
}

func (b *Box) stop() error {
	b.refillNow()
	b.mu.Lock()
	lns := b.listeners
	b.listeners = nil
	b.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	if b.Attached() {
		// Only this process's connection ends; the init kills what it
		// started over it.
		b.closing.Store(true)
		b.fc.Close()
		<-b.died
		b.cancel()
		return nil
	}
	// SIGKILL to PID 1 makes the kernel kill every process of the box's pid
	// namespace, and its exit waits for them, so the group is empty then
	// and goes with one rmdir per hierarchy; only a group that still has
	// members (a process that left the namespace: none should) is frozen
	// and swept. While the kernel ends the box, a non-persistent box's
	// state goes but for its lock file, which this process holds until the
	// end so that no other one starts the box meanwhile.
	b.closing.Store(true)
	if b.cmd.Process != nil {
		b.cmd.Process.Signal(syscall.SIGKILL)
	}
	var cleared chan error
	if !b.persist {
		cleared = make(chan error, 1)
		go func() { cleared <- removeAllBut(b.stateDir, "lock") }()
	}
	<-b.initDone
	if b.cg.RemoveEmpty() != nil {
		b.cg.KillAll()
	}
	b.fc.Close()
	b.conns.Close()
	b.cancel()
	var errs []error
	if err := b.cg.Remove(); err != nil {
		errs = append(errs, err)
	}
	if err := b.egress.Close(); err != nil {
		errs = append(errs, fmt.Errorf("egress session: %w", err))
	}
	if b.spec.LayerImage != "" {
		waitLoopReleased(b.spec.LayerImage, 3*time.Second)
	}
	if b.spec.AttachSocket != "" {
		os.Remove(b.spec.AttachSocket) // the init that listened on it is gone
	}
	if !b.persist {
		err := <-cleared
		if err == nil {
			err = os.RemoveAll(b.stateDir)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove box state %s: %w", b.stateDir, err))
		}
	}
	unix.Flock(int(b.lock.Fd()), unix.LOCK_UN)
	b.lock.Close()
	return errors.Join(errs...)
}

// removeAllBut removes everything in dir except the entry named keep.
func removeAllBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != keep {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// waitLoopReleased waits until no loop device is backed by image (the
// kernel detaches an autoclear loop device once its last mount is gone,
// which may lag the namespace teardown a little).
func waitLoopReleased(image string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if loopDeviceFor(image) == "" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// loopDeviceFor returns the loop device backed by image, or "".
func loopDeviceFor(image string) string {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		if string(bytes.TrimSpace(b)) == image || string(bytes.TrimSuffix(bytes.TrimSpace(b), []byte(" (deleted)"))) == image {
			return "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(m)))
		}
	}
	return ""
}
