// Package agent runs the conversation loop of hermes: a user turn is sent to
// the model, the tool calls it asks for are executed, their results go back,
// and this repeats until the model answers in text or the turn budget ends.
// The shape follows Hermes Agent's loop ("agent-loop.md"): tool calls of one
// response run concurrently where safe and their results return in call
// order, an iteration budget ends with one wrap-up call, and interrupted tool
// calls get a synthetic result so the stored history stays valid for every
// provider.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/tool"
)

// DefaultMaxTurns is the iteration budget per user turn when none is configured.
const DefaultMaxTurns = 90

// Recorder persists a session as it happens. The session store implements it;
// every call must be durable when it returns, and AppendMessage must be
// safe for concurrent use: the results of a parallel batch are stored from
// their tool goroutines as each call finishes.
type Recorder interface {
	AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error)
	AddUsage(ctx context.Context, sessionID string, u llm.Usage, apiCalls int) error
}

// UsageAppender is implemented by a Recorder that can store a model
// call's answer and that call's token usage in one durable write; the
// agent then records them together instead of with AddUsage before
// AppendMessage (one commit per model call instead of two).
type UsageAppender interface {
	AppendMessageUsage(ctx context.Context, sessionID string, m llm.Message, u llm.Usage, apiCalls int) (int64, error)
}

// TextToolCallParser recovers tool calls a model wrote as text. It returns
// the calls and the content with the call markup removed.
type TextToolCallParser func(content string, known func(name string) bool) ([]llm.ToolCall, string)

// Compactor shrinks a session's history when the prompt grows past the
// model's context budget. Compact reports whether it changed the history.
// force is set after the provider rejected a prompt as too long.
type Compactor interface {
	Compact(ctx context.Context, s *Session, lastUsage llm.Usage, force bool) (bool, error)
}

// Options configures an Agent.
type Options struct {
	Provider llm.Provider
	// ProviderName is Provider's slug for notices and the stored messages
	// ("" = Provider.Name()).
	ProviderName string
	Model        string
	// Fallbacks are tried in order when a model call fails in a way the
	// next provider may not share (see streamFallingBack); nil = none.
	Fallbacks []Route
	Tools     *tool.Registry
	Recorder  Recorder // nil: nothing is persisted
	// MaxTurns is the number of model calls with tools per user turn; at the
	// limit one more call without tools asks for a final answer. 0 = DefaultMaxTurns.
	MaxTurns        int
	MaxTokens       int
	ReasoningEffort string
	// ParseTextToolCalls recovers <tool_call> markup from text answers (nil = off).
	ParseTextToolCalls TextToolCallParser
	// Redact, when set, is applied to every tool result before it is stored
	// or sent to the model (it removes the agent's own secrets), and to the
	// text and tool-call arguments of every stored message and tool event
	// (a model can write a secret it was shown or told). Reasoning is kept
	// as is: providers sign it.
	Redact func(string) string
	// Compactor is consulted before each model call (nil = never compact).
	Compactor Compactor
	// OnEvent receives progress for a person: streamed text, tool calls,
	// notices. It is called from the loop's goroutine and from tool
	// goroutines; implementations must be safe for concurrent use.
	OnEvent func(Event)
	// RepeatedFailureLimit stops a turn when the same failing tool call (same
	// name and arguments) has failed this many times. 0 = 3.
	RepeatedFailureLimit int
	// TaskID, when set, is the session id tool calls carry instead of the
	// session's own: a subagent's (delegate_task) tools share its parent's
	// environment (the same box), processes and approvals.
	TaskID string
	// SpillDir receives the whole text of tool results cut in a request
	// (see boundResults; "" = none: the stored session keeps them whole).
	SpillDir string
	Now      func() time.Time
}

// EventKind tells which fields of an Event are set.
type EventKind int

// Kinds of agent progress events.
const (
	// EventModel wraps a model stream event in Model.
	EventModel EventKind = iota + 1
	// EventToolStart: Call is about to run.
	EventToolStart
	// EventToolResult: Call finished with Result.
	EventToolResult
	// EventNotice: Text is a one-line notice for the person (budget reached,
	// compression, retry...).
	EventNotice
	// EventRetry: Text is a one-line retry progress message (a model call
	// failed transiently and is being repeated); quiet runs do not show it.
	EventRetry
)

// Event is progress of a turn, for display.
type Event struct {
	Kind   EventKind
	Model  llm.Event
	Call   llm.ToolCall
	Result tool.Result
	Text   string
	// Fallback marks the EventNotice of a turn moving on to a fallback provider.
	Fallback bool
}

// Session is one conversation: its id, its system prompt (built once and
// byte-stable) and its history without the system prompt.
type Session struct {
	ID      string
	System  string
	History []llm.Message
}

// TurnResult is the outcome of one user turn.
type TurnResult struct {
	Text      string    // final answer
	Usage     llm.Usage // summed over the turn's model calls
	APICalls  int
	ToolCalls int
	// Stopped is set when the turn ended without a normal final answer:
	// "max_turns", "repeated_failure".
	Stopped string
	// Model is the model that made the turn's last model call (a fallback
	// provider's after a failover).
	Model string

	route int      // index of the turn's route (0 = primary, i = Fallbacks[i-1])
	tried []string // routes that failed, for the FallbackError
}

// ErrCancelled is returned when the turn was interrupted (Ctrl-C, SIGTERM).
var ErrCancelled = errors.New("turn cancelled")

// Agent runs turns. It is safe to run turns of different sessions
// concurrently; one session must not run two turns at once.
type Agent struct {
	opts Options
	// model overrides opts.Model when set (SetModel: a chat's /model).
	model atomic.Pointer[string]
}

// New returns an Agent.
func New(opts Options) *Agent {
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = DefaultMaxTurns
	}
	if opts.RepeatedFailureLimit <= 0 {
		opts.RepeatedFailureLimit = 3
	}
	if opts.Tools == nil {
		opts.Tools = tool.NewRegistry()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Agent{opts: opts}
}

// MaxTurns is the iteration budget per user turn.
func (a *Agent) MaxTurns() int { return a.opts.MaxTurns }

// Model is the model the next call uses.
func (a *Agent) Model() string {
	if m := a.model.Load(); m != nil {
		return *m
	}
	return a.opts.Model
}

// SetModel switches the model of later calls (same provider); "" goes
// back to the configured one. Safe while a turn runs: the next call uses it.
func (a *Agent) SetModel(name string) {
	if name == "" {
		a.model.Store(nil)
		return
	}
	a.model.Store(&name)
}

func (a *Agent) emit(ev Event) {
	if a.opts.OnEvent == nil {
		return
	}
	if a.opts.Redact != nil && ev.Call.Arguments != "" {
		ev.Call.Arguments = a.opts.Redact(ev.Call.Arguments)
	}
	a.opts.OnEvent(ev)
}

func (a *Agent) notice(format string, args ...any) {
	a.emit(Event{Kind: EventNotice, Text: fmt.Sprintf(format, args...)})
}

// record appends m to the session history and persists it.
func (a *Agent) record(ctx context.Context, s *Session, m llm.Message) error {
	s.History = append(s.History, m)
	return a.persist(ctx, s.ID, m)
}

// recordAnswer appends the model's answer m to the session history and
// persists it with u, the usage of the call that produced it (see
// UsageAppender; other recorders got u from call already).
func (a *Agent) recordAnswer(ctx context.Context, s *Session, m llm.Message, u llm.Usage) error {
	ua, ok := a.opts.Recorder.(UsageAppender)
	if !ok {
		return a.record(ctx, s, m)
	}
	s.History = append(s.History, m)
	if _, err := ua.AppendMessageUsage(context.WithoutCancel(ctx), s.ID, a.redactMessage(m), u, 1); err != nil {
		return fmt.Errorf("saving message to the session store: %w", err)
	}
	return nil
}

// redactMessage returns m with Redact applied to its text and its tool
// calls' arguments (copied: the in-memory history keeps what the model
// wrote, so the rest of the turn is unchanged).
func (a *Agent) redactMessage(m llm.Message) llm.Message {
	if a.opts.Redact == nil {
		return m
	}
	if m.Role != llm.RoleTool { // tool results were redacted when they came back (runTools)
		m.Content = a.opts.Redact(m.Content)
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]llm.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.Arguments = a.opts.Redact(tc.Arguments)
			calls[i] = tc
		}
		m.ToolCalls = calls
	}
	return m
}

// persist stores m in the session's record without touching the in-memory
// history. It is safe to call from tool goroutines.
func (a *Agent) persist(ctx context.Context, sessionID string, m llm.Message) error {
	if a.opts.Recorder == nil {
		return nil
	}
	m = a.redactMessage(m)
	// Persist even when ctx is cancelled: an interrupted turn must still
	// leave a valid history behind.
	if _, err := a.opts.Recorder.AppendMessage(context.WithoutCancel(ctx), sessionID, m); err != nil {
		return fmt.Errorf("saving message to the session store: %w", err)
	}
	return nil
}
