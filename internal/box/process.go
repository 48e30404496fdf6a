package box

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box/wire"
)

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
