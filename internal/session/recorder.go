package session

import (
	"context"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// writeGate serializes this process's writes to state.db. SQLite runs one
// writer at a time anyway; queueing hundreds of sessions' writes on a Go
// mutex instead of SQLite's busy handler (which polls and is not fair)
// keeps a busy gateway from failing writes with "database is locked"
// once the queue is longer than the busy timeout. Other processes still
// wait on the busy timeout.
type writeGate struct{ mu sync.Mutex }

// recorder is the session store as the agent's Recorder, behind the gate.
// Writes go through the lazy store.Recorder: a new session's row is
// written with its first message, so a run killed before that leaves no
// empty session behind.
type recorder struct {
	st   *store.Store
	lazy *store.Recorder
	gate *writeGate
}

func (r recorder) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.lazy.AppendMessage(ctx, sessionID, m)
}

func (r recorder) AddUsage(ctx context.Context, sessionID string, u llm.Usage, apiCalls int) error {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.lazy.AddUsage(ctx, sessionID, u, apiCalls)
}

// RewriteHistory adapts the store to agent.HistoryRewriter (compaction).
func (r recorder) RewriteHistory(ctx context.Context, sessionID string, msgs []llm.Message) error {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	if err := r.lazy.Ensure(ctx, sessionID); err != nil {
		return err
	}
	return r.st.ReplaceActive(ctx, sessionID, msgs)
}

// Ensure writes a new session's deferred row now, without messages (for
// changes that need the row, such as /title). Other ids are left alone.
func (r recorder) Ensure(ctx context.Context, sessionID string) error {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.lazy.Ensure(ctx, sessionID)
}

// Pending reports whether the session's row is not yet written (a new
// session without messages).
func (r recorder) Pending(sessionID string) bool { return r.lazy.Pending(sessionID) }
