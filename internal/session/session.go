package session

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/textcall"
	"github.com/hermes-go/hermes/internal/mcp"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

// ErrInterrupted is the cancellation cause of a turn stopped by a newer
// message sent with Interrupt.
var ErrInterrupted = errors.New("interrupted by a newer message")

// Session is one conversation hosted by a Runtime: its agent, its history,
// its turn queue and its subscribers. Methods are safe for concurrent use.
type Session struct {
	rt       *Runtime
	id       string
	source   string
	platform string
	// cronOrigin is the chat a cron run's job was made from (RunCron):
	// the run's cronjob tool sees that chat's jobs only. Set before the
	// run's turn is sent, then only read.
	cronOrigin string
	agent      *agent.Agent
	tools      *tool.Registry // the runtime's tools plus the session's MCP tools
	mcp        *mcp.Manager   // nil without MCP servers
	// compactor is the context compressor (nil when compression is off).
	compactor agent.Compactor

	mu      sync.Mutex
	state   *agent.Session // owned by the running turn while one runs
	queue   []*Turn
	running *Turn
	idle    chan struct{} // closed while no turn is running or queued
	subs    map[*Subscription]struct{}
	seq     uint64
	pending []approval.Prompt // approval prompts waiting for an answer
	// questions are clarify questions waiting for an answer, oldest first.
	questions []*Question
	closed    bool
	elem      *list.Element
	// seen is the session's stored message count when this process last
	// read or wrote it; another process's turn in between changes it, and
	// the next turn then reloads the history first. Owned by the running turn.
	seen int
	// unrecorded is set when the loaded history ends with tool calls
	// without a stored result (a killed run); the next turn stores
	// agent.UnknownOutcomeResult for them once it holds the turn lock.
	unrecorded bool
}

// ID is the session id (state.db).
func (s *Session) ID() string { return s.id }

// ResumeHint is the line Hermes prints when an interactive chat ends on a
// session with messages: how to come back to it ("Resume this session
// with: hermes --resume ID"). It is "" for a session without messages.
func (s *Session) ResumeHint() string {
	if len(s.History()) == 0 {
		return ""
	}
	return "Resume this session with: hermes --resume " + s.id + "\n"
}

// Source is the session's source in state.db (cli, telegram, api_server...).
func (s *Session) Source() string { return s.source }

// Runtime is the runtime hosting the session.
func (s *Session) Runtime() *Runtime { return s.rt }

// Turn is one user message being answered.
type Turn struct {
	ID     string
	Text   string
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	res    agent.TurnResult
	err    error
}

// Done is closed when the turn has ended.
func (t *Turn) Done() <-chan struct{} { return t.done }

// Wait blocks until the turn ends (its result) or ctx ends (ctx.Err()).
// A cancelled turn returns agent.ErrCancelled.
func (t *Turn) Wait(ctx context.Context) (agent.TurnResult, error) {
	select {
	case <-t.done:
		return t.res, t.err
	case <-ctx.Done():
		return agent.TurnResult{}, ctx.Err()
	}
}

// SendOptions say what to do when a turn is already running.
type SendOptions struct {
	// Interrupt stops the running turn and answers this message next
	// (ahead of queued ones); without it the message is queued.
	Interrupt bool
}

// Ack acknowledges a sent message to its sender.
type Ack struct {
	TurnID string
	// Position is 0 when the turn starts at once, else its place in the
	// queue (1 = next).
	Position int
	// Interrupted is set when a running turn is being stopped for it.
	Interrupted bool
}

// Send submits a user message. The turn runs when the session is free;
// its context derives from ctx (cancelling ctx cancels the turn). The
// returned Turn reports the result; subscribers get the turn's events.
func (s *Session) Send(ctx context.Context, text string, o SendOptions) (*Turn, Ack, error) {
	tctx, cancel := context.WithCancelCause(context.WithValue(ctx, turnContextKey{}, s))
	s.rt.mu.Lock()
	s.rt.turnSeq++
	id := s.id + "/" + strconv.Itoa(s.rt.turnSeq)
	s.rt.mu.Unlock()
	t := &Turn{ID: id, Text: text, ctx: tctx, cancel: cancel, done: make(chan struct{})}
	s.rt.touch(s)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel(ErrClosed)
		return nil, Ack{}, ErrClosed
	}
	ack := Ack{TurnID: id}
	switch {
	case s.running == nil && len(s.queue) == 0:
		s.queue = append(s.queue, t)
		s.idle = make(chan struct{})
		go s.work()
		return t, ack, nil
	case o.Interrupt && s.running != nil:
		s.running.cancel(ErrInterrupted)
		s.queue = slices.Insert(s.queue, 0, t)
		ack.Position, ack.Interrupted = 1, true
	default:
		s.queue = append(s.queue, t)
		ack.Position = len(s.queue)
	}
	s.publishLocked(Event{TurnID: id, Kind: Queued, Text: text, Position: ack.Position, Interrupted: ack.Interrupted})
	return t, ack, nil
}

// Cancel stops the running turn and drops the queued ones (/stop). It
// reports whether anything was cancelled.
func (s *Session) Cancel() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue)
	for _, t := range s.queue {
		t.cancel(context.Canceled)
	}
	if s.running != nil {
		s.running.cancel(context.Canceled)
		n++
	}
	return n > 0
}

// Busy reports whether a turn is running or queued.
func (s *Session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running != nil || len(s.queue) > 0
}

// WaitIdle blocks until no turn is running or queued, or ctx ends.
func (s *Session) WaitIdle(ctx context.Context) error {
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// work runs queued turns one at a time until the queue is empty. A
// turn's last event (Final or Error) is published after the turn left
// running, under the same lock: a sender that saw the answer finds the
// session free.
func (s *Session) work() {
	s.mu.Lock()
	for len(s.queue) > 0 {
		t := s.queue[0]
		s.queue = s.queue[1:]
		s.running = t
		s.mu.Unlock()
		end := s.runTurn(t)
		s.mu.Lock()
		s.running = nil
		s.publishLocked(end)
		t.cancel(nil)
		close(t.done)
	}
	close(s.idle)
	s.mu.Unlock()
}

// runTurn runs t and returns its last event (not yet published).
func (s *Session) runTurn(t *Turn) Event {
	if t.ctx.Err() != nil {
		t.err = agent.ErrCancelled
		return Event{TurnID: t.ID, Kind: Error, Err: t.err, Cancelled: true}
	}
	if s.rt.opts.Lock != nil {
		unlock, err := s.rt.opts.Lock(t.ctx, s.rt.store, s.id)
		if err != nil && t.ctx.Err() != nil {
			err = agent.ErrCancelled // given up while waiting for another process's turn
		}
		if err != nil {
			t.err = err
			return Event{TurnID: t.ID, Kind: Error, Err: err, Cancelled: t.ctx.Err() != nil}
		}
		defer unlock()
	}
	if err := s.reloadIfChanged(t.ctx); err != nil {
		t.err = err
		return Event{TurnID: t.ID, Kind: Error, Err: err, Cancelled: t.ctx.Err() != nil}
	}
	s.mcpReady(t.ctx)
	s.publish(Event{TurnID: t.ID, Kind: TurnStart, Text: t.Text})
	first := len(s.state.History) == 0
	t.res, t.err = s.agent.RunTurn(t.ctx, s.state, t.Text)
	if first && t.err == nil {
		s.autoTitle(context.WithoutCancel(t.ctx), t.Text, t.res.Text)
	}
	if st, err := s.rt.store.Session(context.WithoutCancel(t.ctx), s.id); err == nil {
		s.seen = st.MessageCount
	}
	if t.err != nil {
		t.err = s.rt.redactError(t.err)
		return Event{TurnID: t.ID, Kind: Error, Err: t.err, Result: t.res, Cancelled: errors.Is(t.err, agent.ErrCancelled)}
	}
	return Event{TurnID: t.ID, Kind: Final, Text: t.res.Text, Result: t.res}
}

// reloadIfChanged reloads the history when another process stored
// messages in the session since this one last read or wrote it (two
// REPLs on one session, taking turns under the turn lock).
func (s *Session) reloadIfChanged(ctx context.Context) error {
	if s.rt.lazy.Pending(s.id) {
		return nil
	}
	st, err := s.rt.store.Session(ctx, s.id)
	if err != nil {
		return err
	}
	if st.MessageCount == s.seen && !s.unrecorded {
		return nil
	}
	history, err := s.rt.store.Messages(ctx, s.id)
	if err != nil {
		return err
	}
	// Tool calls a killed run left without a result get
	// agent.UnknownOutcomeResult, stored here under the turn lock (another
	// run may have been still running the call and stored its result).
	rec := s.rt.recorder()
	count := st.MessageCount
	for _, m := range agent.UnrecordedResults(history) {
		if _, err := rec.AppendMessage(ctx, s.id, m); err != nil {
			return fmt.Errorf("saving the unknown-outcome result of an interrupted tool call: %w", err)
		}
		history = append(history, m)
		count++
	}
	s.unrecorded = false
	s.mu.Lock()
	s.state.History = agent.RepairHistory(history)
	s.mu.Unlock()
	s.rt.todo.Restore(s.id, history)
	s.seen = count
	return nil
}

// Subscribe starts receiving the session's events from now on.
func (s *Session) Subscribe(o SubscribeOptions) *Subscription {
	sub := newSubscription(o)
	sub.cancel = func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[*Subscription]struct{}{}
	}
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	return sub
}

func (s *Session) publish(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(ev)
}

func (s *Session) publishLocked(ev Event) {
	s.seq++
	ev.Seq, ev.SessionID = s.seq, s.id
	for sub := range s.subs {
		sub.push(ev)
	}
}

// onAgentEvent turns agent progress into session events of the running turn.
func (s *Session) onAgentEvent(ev agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	turn := ""
	if s.running != nil {
		turn = s.running.ID
	}
	out := Event{TurnID: turn}
	switch ev.Kind {
	case agent.EventModel:
		switch ev.Model.Type {
		case llm.EventTextDelta:
			out.Kind = TextDelta
		case llm.EventReasoningDelta:
			out.Kind = ReasoningDelta
		default:
			return
		}
		out.Text = ev.Model.Text
	case agent.EventToolStart:
		out.Kind, out.Tool, out.CallID, out.Args = ToolStart, ev.Call.Name, ev.Call.ID, ev.Call.Arguments
	case agent.EventToolResult:
		out.Kind, out.Tool, out.CallID, out.Args = ToolEnd, ev.Call.Name, ev.Call.ID, ev.Call.Arguments
		out.Text, out.IsError = ev.Result.Content, ev.Result.IsError
	case agent.EventNotice:
		out.Kind, out.Text, out.Fallback = Notice, ev.Text, ev.Fallback
	case agent.EventRetry:
		out.Kind, out.Text = Retry, ev.Text
	default:
		return
	}
	s.publishLocked(out)
}

// hasApprover reports whether a subscriber answers approvals.
func (s *Session) hasApprover() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		if sub.opts.Approver {
			return true
		}
	}
	return false
}

// PendingApprovals are the approval prompts waiting for an answer, oldest first.
func (s *Session) PendingApprovals() []approval.Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pending)
}

// Approve answers the pending prompt id of this session ("" = the oldest).
// It reports whether a prompt was waiting.
func (s *Session) Approve(id string, a approval.Answer) bool {
	s.mu.Lock()
	found := false
	for _, p := range s.pending {
		if id == "" || p.ID == id {
			id, found = p.ID, true
			break
		}
	}
	s.mu.Unlock()
	return found && s.rt.approvals.Resolve(id, a)
}

// History returns a copy of the session's messages. Call it while idle.
func (s *Session) History() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.History)
}

// State is the agent's view of the session (id, system prompt, history),
// for callers that run work on it between turns (the self-review). It
// must not be used while a turn runs.
func (s *Session) State() *agent.Session { return s.state }

// Close cancels the session's turns, waits for them, and releases its
// agent, background processes and environment (the box is stopped; its
// persistent state is kept). The stored session stays resumable.
func (s *Session) Close() error {
	s.rt.remove(s)
	s.shutdown()
	return nil
}

func (s *Session) shutdown() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	subs := make([]*Subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	s.Cancel()
	_ = s.WaitIdle(context.Background())
	s.rt.processes.KillSession(s.id)
	if s.rt.browsers != nil {
		s.rt.browsers.CloseSession(s.id)
	}
	s.rt.approvals.Forget(s.id)
	s.rt.lazy.Forget(s.id)
	if s.mcp != nil {
		_ = s.mcp.Close() // before the box stops: its stdio servers run there
	}
	if st, ok := s.rt.backend.(interface{ Stop(taskID string) error }); ok {
		_ = st.Stop(s.id)
	}
	for _, sub := range subs {
		sub.Close()
	}
}

// newSession wires an agent for the stored session st with history.
func (rt *Runtime) newSession(st store.Session, system string, history []llm.Message, platform string, servers clientMCP) *Session {
	s := &Session{rt: rt, id: st.ID, source: st.Source, platform: platform, seen: st.MessageCount,
		state: &agent.Session{ID: st.ID, System: system, History: agent.RepairHistory(history)}}
	rt.startMCP(s, servers)
	var compactor agent.Compactor
	c := rt.cfg
	if enabled(c.Compression.Enabled) {
		summary := rt.auxOrMain(config.AuxCompression)
		compactor = agent.NewCompressor(agent.CompressorOptions{
			Provider: summary.Provider, Model: summary.Model, ContextWindow: rt.window,
			Threshold: c.Compression.Threshold, ProtectFirstN: c.Compression.ProtectFirstN, ProtectLastN: c.Compression.ProtectLastN,
			Pending: rt.todo.Pending, Rewriter: rt.recorder(), SpillDir: filepath.Join(rt.opts.Home, "cache", "context"),
			Notice: func(text string) { s.onAgentEvent(agent.Event{Kind: agent.EventNotice, Text: text}) },
		})
	}
	s.compactor = compactor
	s.agent = agent.New(agent.Options{
		Provider: rt.provider, ProviderName: rt.provName, Fallbacks: rt.fallbacks, Model: rt.model, Tools: s.tools, Recorder: rt.recorder(),
		MaxTurns: c.Agent.MaxTurns, MaxTokens: c.Model.MaxTokens, ReasoningEffort: c.Agent.ReasoningEffort,
		ParseTextToolCalls: textcall.Extract, Compactor: s.compactor, OnEvent: s.onAgentEvent, Now: rt.opts.Now,
		SpillDir: filepath.Join(rt.opts.Home, "cache", "context"),
		Redact:   rt.redact.Redact,
	})
	return s
}

// Model is the model the session's next model call uses.
func (s *Session) Model() string { return s.agent.Model() }

// SetModel switches the session's model (same provider) from its next
// model call on; "" goes back to the configured model. The choice is
// stored in the session's metadata ("model"), so a resumed session keeps
// it (a chat's /model survives a gateway restart).
func (s *Session) SetModel(ctx context.Context, name string) error {
	s.agent.SetModel(name)
	rec := s.rt.recorder()
	if err := rec.Ensure(ctx, s.id); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"model": nilIfEmpty(name)})
	if err != nil {
		return err
	}
	return s.rt.store.SetMetadata(ctx, s.id, patch)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil // a merge patch's null removes the key
	}
	return s
}

// storedModel is the model a session's metadata names ("" = none).
func storedModel(meta []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(meta, &m)
	return m.Model
}

// MaxTurns is the tool-calling iteration budget per turn.
func (s *Session) MaxTurns() int { return s.agent.MaxTurns() }

// redactError removes secrets from a turn's error message, keeping its
// identity for errors.Is/As.
func (rt *Runtime) redactError(err error) error {
	if msg := rt.redact.Redact(err.Error()); msg != err.Error() {
		return &redactedError{err: err, msg: msg}
	}
	return err
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// prompt is the approval prompter of every session: it asks the session's
// approver subscribers with an ApprovalRequest event and waits; the answer
// comes through Session.Approve (approval.Service.Resolve).
func (rt *Runtime) prompt(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	s := rt.lookup(p.SessionID)
	if s == nil || !s.hasApprover() {
		return approval.Deny, approval.ErrNoPrompter
	}
	s.mu.Lock()
	s.pending = append(s.pending, p)
	turn := ""
	if s.running != nil {
		turn = s.running.ID
	}
	done := make(chan struct{})
	s.publishLocked(Event{TurnID: turn, Kind: ApprovalRequest, Approval: &p, ApprovalDone: done,
		Text: fmt.Sprintf("%s: %s", p.Danger, p.Command)})
	s.mu.Unlock()
	defer func() {
		close(done)
		s.mu.Lock()
		s.pending = slices.DeleteFunc(s.pending, func(q approval.Prompt) bool { return q.ID == p.ID })
		s.mu.Unlock()
	}()
	<-ctx.Done()
	return approval.Deny, ctx.Err()
}
