package e2b

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/envd/process"
)

// maxCaptured bounds the output kept in ExecResult.Output.
const maxCaptured = 16 << 20

// signalNames maps envd's end status ("signal: killed", as Go's
// os.ProcessState prints it) back to signal names.
var signalNames = map[string]string{"killed": "SIGKILL", "terminated": "SIGTERM", "interrupt": "SIGINT",
	"hangup": "SIGHUP", "aborted": "SIGABRT", "segmentation fault": "SIGSEGV", "broken pipe": "SIGPIPE"}

// proc is a command in the sandbox (backend.Process).
type proc struct {
	conn    *sandboxConn
	pid     uint32
	out     io.Writer
	discard bool
	began   time.Time
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	buf    bytes.Buffer
	result backend.ExecResult
	err    error
}

func (e *env) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	p, err := e.start(ctx, req, false)
	if err != nil {
		return backend.ExecResult{}, err
	}
	return p.Wait(ctx)
}

func (e *env) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	return e.start(ctx, req, true)
}

// start runs req: bash -c with stderr joined to stdout (one ordered
// stream, as the other backends give); stdin open when req has one or the
// process runs in the background (Write).
func (e *env) start(ctx context.Context, req backend.ExecRequest, background bool) (*proc, error) {
	c, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	cwd := Workdir
	if req.Workdir != "" {
		cwd = e.abs(req.Workdir)
	}
	stdin := req.Stdin != nil || background
	// The stream's deadline (Connect-Timeout-Ms) is the command's timeout:
	// the server kills the command when it passes. A background command's
	// stream outlives ctx.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if req.Timeout > 0 {
		sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), req.Timeout)
	}
	msg := &process.StartRequest{Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-c", "exec 2>&1\n" + req.Command},
		Envs: req.Env, Cwd: &cwd}, Stdin: &stdin}
	stream, err := c.proc.Start(sctx, connect.NewRequest(msg))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("e2b start: %w", err)
	}
	if !stream.Receive() {
		cancel()
		return nil, fmt.Errorf("e2b start: %w", errors.Join(stream.Err(), errors.New("no start event")))
	}
	p := &proc{conn: c, pid: stream.Msg().GetEvent().GetStart().GetPid(), out: req.Output,
		discard: req.Output != nil && req.DiscardOutput, began: time.Now(), cancel: cancel, done: make(chan struct{})}
	e.mu.Lock()
	e.procs[p] = struct{}{}
	e.mu.Unlock()
	go func() {
		p.follow(stream, req.Timeout > 0)
		e.mu.Lock()
		delete(e.procs, p)
		e.mu.Unlock()
	}()
	if req.Stdin != nil {
		go backend.FeedStdin(p, req.Stdin, 64<<10)
	}
	return p, nil
}

// follow reads the process's events until its end.
func (p *proc) follow(stream *connect.ServerStreamForClient[process.StartResponse], timed bool) {
	defer close(p.done)
	defer p.cancel()
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if d := ev.GetData(); d != nil {
			data := d.GetStdout()
			if data == nil {
				data = append(d.GetStderr(), d.GetPty()...)
			}
			p.mu.Lock()
			if room := maxCaptured - p.buf.Len(); room > 0 && !p.discard {
				p.buf.Write(data[:min(room, len(data))])
			}
			p.mu.Unlock()
			if p.out != nil {
				p.out.Write(data)
			}
		}
		if end := ev.GetEnd(); end != nil {
			p.mu.Lock()
			p.result.ExitCode = int(end.GetExitCode())
			if !end.GetExited() {
				p.result.ExitCode = -1
				if name, ok := strings.CutPrefix(end.GetStatus(), "signal: "); ok {
					p.result.Signal = signalNames[name]
					if p.result.Signal == "" {
						p.result.Signal = "SIG" + strings.ToUpper(name)
					}
				}
			}
			p.result.Duration = time.Since(p.began)
			p.mu.Unlock()
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.result.Duration = time.Since(p.began)
	if timed && connect.CodeOf(stream.Err()) == connect.CodeDeadlineExceeded {
		p.result.TimedOut, p.result.ExitCode, p.result.Signal = true, -1, "SIGKILL"
		return
	}
	p.result.ExitCode, p.result.Signal = -1, "SIGKILL"
	p.err = fmt.Errorf("e2b: the command's stream ended: %w", stream.Err())
}

func (p *proc) selector() *process.ProcessSelector {
	return &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: p.pid}}
}

// PID is the process id in the sandbox.
func (p *proc) PID() int { return int(p.pid) }

func (p *proc) Write(data []byte) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.conn.proc.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{Process: p.selector(),
		Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: append([]byte(nil), data...)}}}))
	if err != nil {
		return 0, fmt.Errorf("e2b stdin: %w", err)
	}
	return len(data), nil
}

func (p *proc) CloseStdin() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.conn.proc.CloseStdin(ctx, connect.NewRequest(&process.CloseStdinRequest{Process: p.selector()}))
	return err
}

// Kill ends the process (SIGKILL to its tree).
func (p *proc) Kill() error {
	if p.Done() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.conn.proc.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{Process: p.selector(), Signal: process.Signal_SIGNAL_SIGKILL}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil
	}
	return err
}

// Wait waits for the end; when ctx ends first the process is killed (a
// disconnect alone would leave it running in the sandbox).
func (p *proc) Wait(ctx context.Context) (backend.ExecResult, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Kill()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		return p.snapshot(), ctx.Err()
	}
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	return p.snapshot(), err
}

func (p *proc) snapshot() backend.ExecResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.result
	r.Output = append([]byte(nil), p.buf.Bytes()...)
	return r
}

func (p *proc) Output() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.buf.Bytes()...)
}

func (p *proc) Done() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
