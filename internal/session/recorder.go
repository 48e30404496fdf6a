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
type recorder struct {
	st   *store.Store
	gate *writeGate
}

func (r recorder) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.st.AppendMessage(ctx, sessionID, m)
}

func (r recorder) AddUsage(ctx context.Context, sessionID string, u llm.Usage, apiCalls int) error {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.st.AddUsage(ctx, sessionID, u, apiCalls)
}

// RewriteHistory adapts the store to agent.HistoryRewriter (compaction).
func (r recorder) RewriteHistory(ctx context.Context, sessionID string, msgs []llm.Message) error {
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.st.ReplaceActive(ctx, sessionID, msgs)
}
