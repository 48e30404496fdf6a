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
// It is safe for concurrent use.
type Recorder struct {
	st      *Store
	mu      sync.Mutex
	pending map[string]NewSession
}

// NewRecorder returns a Recorder writing to s.
func (s *Store) NewRecorder() *Recorder {
	return &Recorder{st: s, pending: map[string]NewSession{}}
}

// Defer registers a session to create with its first message. ns.ID must
// be set (NewSessionID).
func (r *Recorder) Defer(ns NewSession) error {
	if ns.ID == "" {
		return fmt.Errorf("deferred session without an id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[ns.ID] = ns
	return nil
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
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.createLocked(ctx, id, nil)
}

func (r *Recorder) createLocked(ctx context.Context, id string, msgs []llm.Message) error {
	ns, ok := r.pending[id]
	if !ok {
		return nil
	}
	ns.Messages = msgs
	if _, err := r.st.CreateSession(ctx, ns); err != nil {
		return err
	}
	delete(r.pending, id)
	return nil
}

// AppendMessage stores m at the end of the session (creating a deferred
// session's row with it) and returns its seq.
func (r *Recorder) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	r.mu.Lock()
	if _, ok := r.pending[sessionID]; ok {
		defer r.mu.Unlock()
		if err := r.createLocked(ctx, sessionID, []llm.Message{m}); err != nil {
			return 0, err
		}
		return 1, nil
	}
	r.mu.Unlock()
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
