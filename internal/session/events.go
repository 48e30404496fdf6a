package session

import (
	"context"
	"sync"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
)

// Kind is the type of an Event.
type Kind int

// Event kinds. TextDelta and ReasoningDelta are droppable: a slow
// subscriber gets them coalesced (consecutive deltas merged into one) and,
// past its pending limit, dropped. Every other kind must be delivered, in
// order, to every subscriber of the session.
const (
	// TextDelta: Text is a piece of the streamed answer (droppable).
	TextDelta Kind = iota + 1
	// ReasoningDelta: Text is a piece of the model's reasoning (droppable).
	ReasoningDelta
	// Queued: the message Text was queued behind a running turn (Position
	// is its place in the queue, 1 = next); or, with Interrupted, the
	// running turn is being stopped for it.
	Queued
	// TurnStart: the turn TurnID started with the user message Text.
	TurnStart
	// ToolStart: tool Tool is about to run with Args (call CallID).
	ToolStart
	// ToolEnd: tool Tool finished; Text is its result, IsError its status.
	ToolEnd
	// Notice: Text is a one-line notice for the person.
	Notice
	// Retry: Text is a one-line retry progress message (a model call
	// failed and is tried again); front ends may leave it out in quiet mode.
	Retry
	// ApprovalRequest: Approval asks the person; answer with Session.Approve.
	ApprovalRequest
	// Final: the turn ended with the answer Text (Result holds usage).
	Final
	// Error: the turn failed or was cancelled (Err; Cancelled is set for a cancel).
	Error
	// ClarifyRequest: the model asks the person Question (the clarify
	// tool); answer with Session.Answer. ApprovalDone is closed when it
	// was answered, timed out or the turn ended.
	ClarifyRequest
)

var kindNames = [...]string{"", "text_delta", "reasoning_delta", "queued", "turn_start", "tool_start",
	"tool_end", "notice", "retry", "approval_request", "final", "error", "clarify_request"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Droppable reports whether a slow subscriber may miss events of kind k
// (they are coalesced first, dropped only past the pending limit).
func (k Kind) Droppable() bool { return k == TextDelta || k == ReasoningDelta }

// Event is progress of one session, as subscribers see it.
type Event struct {
	SessionID string
	TurnID    string
	// Seq numbers the session's events from 1; a gap tells a subscriber
	// that droppable events were dropped or coalesced.
	Seq  uint64
	Kind Kind
	Text string
	// Tool, CallID and Args describe the call of ToolStart/ToolEnd.
	Tool, CallID, Args string
	IsError            bool
	// Position and Interrupted describe a Queued acknowledgement.
	Position    int
	Interrupted bool
	Approval    *approval.Prompt
	// Question is the clarify question of a ClarifyRequest.
	Question *Question
	// ApprovalDone is closed when the ApprovalRequest was answered, timed
	// out or was cancelled: a client stops asking then.
	ApprovalDone <-chan struct{}
	Result       agent.TurnResult
	Err          error
	Cancelled    bool
	// Fallback marks the Notice of a turn moving on to a fallback
	// provider (chat front ends show it; other notices they leave out).
	Fallback bool
}

// DefaultMaxPendingDeltaBytes is a subscriber's default bound on queued,
// undelivered delta text before further deltas are dropped.
const DefaultMaxPendingDeltaBytes = 256 << 10

// SubscribeOptions configures a subscription.
type SubscribeOptions struct {
	// MaxPendingDeltaBytes bounds the undelivered delta text held for this
	// subscriber; past it, deltas are dropped (the Final event still
	// carries the whole answer). 0 = DefaultMaxPendingDeltaBytes, <0 = no bound.
	MaxPendingDeltaBytes int
	// KeepPieces queues each delta as its own event, as the model streamed
	// it (a streaming API relays the pieces); by default consecutive
	// undelivered deltas are joined into one.
	KeepPieces bool
	// Approver marks a subscriber with a person behind it, who answers
	// ApprovalRequest events (with Session.Approve) and ClarifyRequest
	// events (with Session.Answer). Without any, approvals of the session are
	// decided as in a headless run.
	Approver bool
}

// Subscription receives the events of one session. Next must be called
// until Close; undelivered must-deliver events are held without bound.
type Subscription struct {
	opts   SubscribeOptions
	cancel func()

	mu         sync.Mutex
	queue      []Event
	deltaBytes int
	dropped    int
	closed     bool
	notify     chan struct{}
}

func newSubscription(o SubscribeOptions) *Subscription {
	if o.MaxPendingDeltaBytes == 0 {
		o.MaxPendingDeltaBytes = DefaultMaxPendingDeltaBytes
	}
	return &Subscription{opts: o, notify: make(chan struct{}, 1)}
}

// push queues ev, coalescing or dropping a delta per the policy.
func (s *Subscription) push(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if ev.Kind.Droppable() {
		if n := len(s.queue); n > 0 && !s.opts.KeepPieces {
			last := &s.queue[n-1]
			if last.Kind == ev.Kind && last.TurnID == ev.TurnID {
				if s.opts.MaxPendingDeltaBytes > 0 && s.deltaBytes+len(ev.Text) > s.opts.MaxPendingDeltaBytes {
					s.dropped++
					return
				}
				last.Text += ev.Text
				last.Seq = ev.Seq
				s.deltaBytes += len(ev.Text)
				return
			}
		}
		if s.opts.MaxPendingDeltaBytes > 0 && s.deltaBytes+len(ev.Text) > s.opts.MaxPendingDeltaBytes {
			s.dropped++
			return
		}
		s.deltaBytes += len(ev.Text)
	}
	s.queue = append(s.queue, ev)
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Next returns the next event, blocking until one is queued, ctx ends
// (ctx.Err()) or the subscription is closed (ErrClosed).
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue[0] = Event{}
			s.queue = s.queue[1:]
			if ev.Kind.Droppable() {
				s.deltaBytes -= len(ev.Text)
			}
			s.mu.Unlock()
			return ev, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return Event{}, ErrClosed
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Dropped is how many delta events were dropped for this subscriber.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription; queued events are still returned by Next,
// then Next returns ErrClosed.
func (s *Subscription) Close() {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if !already {
		s.cancel()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}
