package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/envd/process"
	"github.com/hermes-go/hermes/internal/envd/process/processconnect"
)

// maxQueuedBytes bounds the output queued for one slow stream reader; past
// it the reader's stream ends with ResourceExhausted (the command goes on).
const maxQueuedBytes = 64 << 20

// maxKeepaliveSeconds bounds the Keepalive-Ping-Interval a client asks for.
const maxKeepaliveSeconds = 3600

// deadlineSlack is how close to a stream's deadline a client's cancel
// counts as reaching the deadline (which kills the command).
const deadlineSlack = 250 * time.Millisecond

// processService is envd's process.Process on boxes.
type processService struct {
	processconnect.UnimplementedProcessHandler
	s *Server
}

// queueBudget bounds the output queued for slow readers over the whole
// server: each stream is bounded (maxQueuedBytes), but a client could
// open many streams (a Start per command, a Connect per process) and read
// none of them, each holding its 64 MiB in the server's memory.
type queueBudget struct {
	max  int64
	used atomic.Int64
}

// take reserves n bytes, or reports that the budget is spent.
func (b *queueBudget) take(n int64) bool {
	if b == nil {
		return true
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *queueBudget) give(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}

// proc is a command started through envd: its config, box process and
// the streams (Start, Connect) that follow its events.
type proc struct {
	cfg   *process.ProcessConfig
	tag   string
	pid   uint32
	p     backend.Process
	stdin *io.PipeWriter // nil when started without stdin
	pty   bool

	budget *queueBudget // the server's, shared by every stream

	mu   sync.Mutex
	subs map[*subscriber]struct{}
	end  *process.ProcessEvent_EndEvent
}

// subscriber is one stream's queue of events; sending never blocks the box.
type subscriber struct {
	budget *queueBudget
	mu     sync.Mutex
	queue  []*process.ProcessEvent
	bytes  int
	over   bool
	notify chan struct{}
}

func (p *proc) subscribe() *subscriber {
	sub := &subscriber{notify: make(chan struct{}, 1), budget: p.budget}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.end != nil {
		sub.push(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: p.end}}, 0)
		return sub
	}
	p.subs[sub] = struct{}{}
	return sub
}

func (p *proc) unsubscribe(sub *subscriber) {
	p.mu.Lock()
	delete(p.subs, sub)
	p.mu.Unlock()
	sub.take() // gives what is still queued back to the budget
}

func (p *proc) broadcast(ev *process.ProcessEvent, size int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for sub := range p.subs {
		sub.push(ev, size)
	}
}

func (sub *subscriber) push(ev *process.ProcessEvent, size int) {
	sub.mu.Lock()
	if sub.bytes+size > maxQueuedBytes || !sub.budget.take(int64(size)) {
		sub.over = true
	} else {
		sub.queue = append(sub.queue, ev)
		sub.bytes += size
	}
	sub.mu.Unlock()
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}

// take returns the queued events (and whether the queue overflowed).
func (sub *subscriber) take() ([]*process.ProcessEvent, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	q := sub.queue
	sub.budget.give(int64(sub.bytes))
	sub.queue, sub.bytes = nil, 0
	return q, sub.over
}

// streamWriter turns a command's output into data events.
type streamWriter struct {
	p      *proc
	stderr bool
}

func (w streamWriter) Write(b []byte) (int, error) {
	data := append([]byte(nil), b...)
	var out process.ProcessEvent_DataEvent
	switch {
	case w.p.pty:
		out.Output = &process.ProcessEvent_DataEvent_Pty{Pty: data}
	case w.stderr:
		out.Output = &process.ProcessEvent_DataEvent_Stderr{Stderr: data}
	default:
		out.Output = &process.ProcessEvent_DataEvent_Stdout{Stdout: data}
	}
	w.p.broadcast(&process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: &out}}, len(data))
	return len(b), nil
}

// endEvent copies envd's end event: exit status text as Go's os/exec
// ProcessState prints it ("exit status 1", "signal: killed").
func endEvent(res backend.ExecResult, err error) *process.ProcessEvent_EndEvent {
	end := &process.ProcessEvent_EndEvent{ExitCode: int32(res.ExitCode), Exited: res.Signal == "", Status: "exit status " + strconv.Itoa(res.ExitCode)}
	if res.Signal != "" {
		end.Status = "signal: " + signalText(res.Signal)
	}
	if err != nil {
		msg := err.Error()
		end.Error = &msg
	}
	return end
}

func signalText(name string) string {
	switch name {
	case "SIGKILL":
		return "killed"
	case "SIGTERM":
		return "terminated"
	case "SIGINT":
		return "interrupt"
	}
	return strings.ToLower(strings.TrimPrefix(name, "SIG"))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandLine is cmd and args as one sh command line (exec, so that the
// process the client sees is the command itself); /bin/bash falls back
// to /bin/sh where the box has no bash.
func commandLine(cfg *process.ProcessConfig) string {
	parts := []string{"exec", shellQuote(cfg.GetCmd())}
	prefix := ""
	if cfg.GetCmd() == "/bin/bash" {
		// The SDKs run commands.run through /bin/bash -l -c, which E2B's
		// templates have; an image without bash (busybox, alpine) gets
		// /bin/sh instead.
		prefix, parts[1] = `b=/bin/bash; [ -x "$b" ] || b=/bin/sh; `, `"$b"`
	}
	for _, a := range cfg.GetArgs() {
		parts = append(parts, shellQuote(a))
	}
	return prefix + strings.Join(parts, " ")
}

// commandEnv is the environment of a command of user u in sb: HOME and
// USER (and the default user's HERMES_HOME), the sandbox's envs, then the
// request's.
func commandEnv(sb *sandbox, u sandboxUser, req map[string]string) map[string]string {
	env := map[string]string{"HOME": u.home, "USER": u.name}
	if u.name == defaultUserName {
		env["HERMES_HOME"] = UserHome + "/.hermes"
	}
	for k, v := range sb.env {
		env[k] = v
	}
	for k, v := range req {
		env[k] = v
	}
	return env
}

func (ps *processService) Start(ctx context.Context, req *connect.Request[process.StartRequest], stream *connect.ServerStream[process.StartResponse]) error {
	sb := sandboxOf(ctx)
	cfg := req.Msg.GetProcess()
	if cfg == nil || cfg.GetCmd() == "" {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd is required"))
	}
	env, err := ps.s.userEnv(ctx, sb)
	if err != nil {
		return connect.NewError(connect.CodeUnavailable, err)
	}
	pr := &proc{cfg: cfg, tag: req.Msg.GetTag(), subs: map[*subscriber]struct{}{}, pty: req.Msg.Pty != nil, budget: ps.s.queued}
	sub := pr.subscribe()
	u := ps.s.userOf(ctx)
	cwd := u.home
	if set, err := ps.s.imageSetupOf(ctx, sb); err == nil && set.workdir != "" {
		cwd = set.workdir // the template image's WorkingDir (image.go)
	}
	if cfg.Cwd != nil && *cfg.Cwd != "" {
		cwd = resolvePath(*cfg.Cwd)
	}
	envs := commandEnv(sb, u, cfg.GetEnvs())
	line := commandLine(cfg)
	if pr.pty {
		// A terminal through script(1): output comes as pty data, input
		// goes to the terminal. The size is set once, at start.
		cols, rows := req.Msg.Pty.GetSize().GetCols(), req.Msg.Pty.GetSize().GetRows()
		envs["TERM"] = cmpOr(envs["TERM"], "xterm-256color")
		line = fmt.Sprintf("stty cols %d rows %d 2>/dev/null; %s", max(cols, 1), max(rows, 1), line)
		line = "exec script -qfec " + shellQuote(line) + " /dev/null"
	}
	ereq := backend.ExecRequest{Command: line, Workdir: cwd, Env: envs, Output: streamWriter{p: pr}, DiscardOutput: true}
	if !pr.pty {
		ereq.Stderr = streamWriter{p: pr, stderr: true}
	}
	if req.Msg.Stdin == nil || req.Msg.GetStdin() || pr.pty {
		r, w := io.Pipe()
		ereq.Stdin, pr.stdin = r, w
	} else {
		ereq.Stdin = strings.NewReader("") // no stdin: end of file at once
	}
	p, err := env.Start(context.WithoutCancel(ctx), ereq)
	if err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("start %s: %w", cfg.GetCmd(), err))
	}
	pr.p, pr.pid = p, uint32(p.PID())
	sb.mu.Lock()
	sb.procs[pr.pid] = pr
	sb.mu.Unlock()
	go ps.wait(sb, pr)
	if err := stream.Send(&process.StartResponse{Event: &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pr.pid}}}}); err != nil {
		return err
	}
	return follow(ctx, sb, pr, sub, req.Header(), func(ev *process.ProcessEvent) error {
		return stream.Send(&process.StartResponse{Event: ev})
	})
}

// wait records the end of pr and drops it from sb's table.
func (ps *processService) wait(sb *sandbox, pr *proc) {
	res, err := pr.p.Wait(context.Background())
	end := endEvent(res, err)
	pr.mu.Lock()
	pr.end = end
	subs := pr.subs
	pr.subs = nil
	pr.mu.Unlock()
	for sub := range subs {
		sub.push(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: end}}, 0)
	}
	if pr.stdin != nil {
		pr.stdin.Close()
	}
	sb.mu.Lock()
	if sb.procs[pr.pid] == pr {
		delete(sb.procs, pr.pid)
	}
	sb.mu.Unlock()
}

// follow sends pr's events to a stream until the end event. The client
// going away leaves the command running (background commands); the
// request's deadline (Connect-Timeout-Ms) kills it, as envd does.
func follow(ctx context.Context, sb *sandbox, pr *proc, sub *subscriber, h interface{ Get(string) string }, send func(*process.ProcessEvent) error) error {
	defer pr.unsubscribe(sub)
	var keepalive <-chan time.Time
	if n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval")); err == nil && n > 0 {
		// Bounded before the multiplication: a huge number overflowed
		// into a negative interval, and NewTicker panicked.
		t := time.NewTicker(time.Duration(min(n, maxKeepaliveSeconds)) * time.Second)
		defer t.Stop()
		keepalive = t.C
	}
	sb.mu.Lock()
	stopped := sb.paused
	sb.mu.Unlock()
	for {
		select {
		case <-sub.notify:
			evs, over := sub.take()
			for _, ev := range evs {
				if err := send(ev); err != nil {
					return err
				}
				if ev.GetEnd() != nil {
					return nil
				}
			}
			if over {
				return connect.NewError(connect.CodeResourceExhausted, errors.New("the stream fell too far behind the command's output"))
			}
		case <-keepalive:
			if err := send(&process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}); err != nil {
				return err
			}
		case <-stopped:
			return connect.NewError(connect.CodeUnavailable, errors.New("the sandbox stopped"))
		case <-ctx.Done():
			// The client aborts at the same deadline, so a cancel that comes
			// within a moment of it counts as the deadline too.
			if dl, ok := ctx.Deadline(); errors.Is(ctx.Err(), context.DeadlineExceeded) || ok && time.Until(dl) < deadlineSlack {
				pr.p.Kill()
				return connect.NewError(connect.CodeDeadlineExceeded, errors.New("the command ran past the request's timeout and was killed"))
			}
			return connect.NewError(connect.CodeCanceled, ctx.Err())
		}
	}
}

// find returns the process sel names in sb.
func find(sb *sandbox, sel *process.ProcessSelector) (*proc, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	switch s := sel.GetSelector().(type) {
	case *process.ProcessSelector_Pid:
		if pr := sb.procs[s.Pid]; pr != nil {
			return pr, nil
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with pid %d not found", s.Pid))
	case *process.ProcessSelector_Tag:
		for _, pr := range sb.procs {
			if pr.tag == s.Tag {
				return pr, nil
			}
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with tag %q not found", s.Tag))
	}
	return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process selector (pid or tag) is required"))
}

func (ps *processService) Connect(ctx context.Context, req *connect.Request[process.ConnectRequest], stream *connect.ServerStream[process.ConnectResponse]) error {
	sb := sandboxOf(ctx)
	pr, err := find(sb, req.Msg.GetProcess())
	if err != nil {
		return err
	}
	sub := pr.subscribe()
	if err := stream.Send(&process.ConnectResponse{Event: &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pr.pid}}}}); err != nil {
		pr.unsubscribe(sub)
		return err
	}
	return follow(ctx, sb, pr, sub, req.Header(), func(ev *process.ProcessEvent) error {
		return stream.Send(&process.ConnectResponse{Event: ev})
	})
}

func (ps *processService) List(ctx context.Context, _ *connect.Request[process.ListRequest]) (*connect.Response[process.ListResponse], error) {
	sb := sandboxOf(ctx)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	out := &process.ListResponse{}
	for _, pr := range sb.procs {
		info := &process.ProcessInfo{Config: pr.cfg, Pid: pr.pid}
		if pr.tag != "" {
			info.Tag = &pr.tag
		}
		out.Processes = append(out.Processes, info)
	}
	return connect.NewResponse(out), nil
}

func (ps *processService) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	pr, err := find(sandboxOf(ctx), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if pr.stdin == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process was started without stdin"))
	}
	data := req.Msg.GetInput().GetStdin()
	if data == nil {
		data = req.Msg.GetInput().GetPty()
	}
	if _, err := pr.stdin.Write(data); err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("stdin: %w", err))
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

// SendSignal ends the process: SIGKILL and SIGTERM both kill its whole
// tree (the box kills with SIGKILL only).
func (ps *processService) SendSignal(ctx context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	pr, err := find(sandboxOf(ctx), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	switch req.Msg.GetSignal() {
	case process.Signal_SIGNAL_SIGKILL, process.Signal_SIGNAL_SIGTERM:
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("signal %v is not SIGKILL or SIGTERM", req.Msg.GetSignal()))
	}
	if err := pr.p.Kill(); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

func (ps *processService) CloseStdin(ctx context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	pr, err := find(sandboxOf(ctx), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if pr.stdin != nil {
		pr.stdin.Close()
	}
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

// Update accepts a PTY resize; the terminal keeps its start size.
func (ps *processService) Update(ctx context.Context, req *connect.Request[process.UpdateRequest]) (*connect.Response[process.UpdateResponse], error) {
	if _, err := find(sandboxOf(ctx), req.Msg.GetProcess()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.UpdateResponse{}), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
