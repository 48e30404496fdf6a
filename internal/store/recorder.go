package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
)

// Recorder persists conversations as they happen (it implements
// agent.Recorder). A session registered with Defer gets its row only
// together with its first message, in one transaction, so a run killed
// before anything was said leaves no empty session for `-c` to pick up.
// It is safe for concurrent use; sessions do not wait for each other's
// first write.
type Recorder struct {
	st      Store
	mu      sync.Mutex
	pending map[string]*deferredSession
}

// deferredSession is a session whose row is not written yet; its mutex
// orders the row's creation before the session's other writes.
type deferredSession struct {
	mu      sync.Mutex
	ns      NewSession
	created bool
}

// NewRecorder returns a Recorder writing to st.
func NewRecorder(st Store) *Recorder {
	return &Recorder{st: st, pending: map[string]*deferredSession{}}
}

// Defer registers a session to create with its first message. ns.ID must
// be set (NewSessionID).
func (r *Recorder) Defer(ns NewSession) error {
	if ns.ID == "" {
		return fmt.Errorf("deferred session without an id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[ns.ID] = &deferredSession{ns: ns}
	return nil
}

// Forget drops a deferred session that was never written (its session
// closed without a message), so a long-running gateway does not keep one
// entry per visitor.
func (r *Recorder) Forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, id)
}

// Pending reports whether id is deferred and not yet stored.
func (r *Recorder) Pending(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pending[id]
	return ok
}

// Ensure writes a deferred session's row now, without messages (for
// changes that need it, such as a title). It does nothing for other ids.
func (r *Recorder) Ensure(ctx context.Context, id string) error {
	_, err := r.create(ctx, id, nil)
	return err
}

// create writes a deferred session's row with msgs; wrote is false when
// id was not deferred (or another call created it first), so the caller
// writes msgs itself.
func (r *Recorder) create(ctx context.Context, id string, msgs []llm.Message) (wrote bool, err error) {
	r.mu.Lock()
	d, ok := r.pending[id]
	r.mu.Unlock()
	if !ok {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.created {
		return false, nil
	}
	ns := d.ns
	ns.Messages = msgs
	if _, err := r.st.CreateSession(ctx, ns); err != nil {
		return false, err
	}
	d.created = true
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
	return true, nil
}

// AppendMessage stores m at the end of the session (creating a deferred
// session's row with it) and returns its seq.
func (r *Recorder) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	wrote, err := r.create(ctx, sessionID, []llm.Message{m})
	if err != nil {
		return 0, err
	}
	if wrote {
		return 1, nil
	}
	return r.st.AppendMessage(ctx, sessionID, m)
}

// AddUsage adds token usage to the session's totals (creating a deferred
// session's row first).
func (r *Recorder) AddUsage(ctx context.Context, sessionID string, u llm.Usage, apiCalls int) error {
	if err := r.Ensure(ctx, sessionID); err != nil {
		return err
	}
	return r.st.AddUsage(ctx, sessionID, u, apiCalls)
}

// AppendMessageUsage stores m at the end of the session and adds the usage
// of the model call that produced it, in one write when the session's row
// exists (it implements agent.UsageAppender).
func (r *Recorder) AppendMessageUsage(ctx context.Context, sessionID string, m llm.Message, u llm.Usage, apiCalls int) (int64, error) {
	wrote, err := r.create(ctx, sessionID, []llm.Message{m})
	if err != nil {
		return 0, err
	}
	if wrote {
		return 1, r.st.AddUsage(ctx, sessionID, u, apiCalls)
	}
	return r.st.AppendMessageUsage(ctx, sessionID, m, u, apiCalls)
}
