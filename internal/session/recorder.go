package session

import (
	"context"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// recorder is the session store as the agent's Recorder. The store
// queues this process's writes itself (and group-commits message appends
// across sessions). Writes go through the lazy store.Recorder: a new session's row is
// written with its first message, so a run killed before that leaves no
// empty session behind.
type recorder struct {
	st   store.Store
	lazy *store.Recorder
}

func (r recorder) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	return r.lazy.AppendMessage(ctx, sessionID, m)
}

func (r recorder) AddUsage(ctx context.Context, sessionID string, u llm.Usage, apiCalls int) error {
	return r.lazy.AddUsage(ctx, sessionID, u, apiCalls)
}

// AppendMessageUsage stores a model's answer with its call's usage in one
// write (agent.UsageAppender).
func (r recorder) AppendMessageUsage(ctx context.Context, sessionID string, m llm.Message, u llm.Usage, apiCalls int) (int64, error) {
	return r.lazy.AppendMessageUsage(ctx, sessionID, m, u, apiCalls)
}

// RewriteHistory adapts the store to agent.HistoryRewriter (compaction).
func (r recorder) RewriteHistory(ctx context.Context, sessionID string, msgs []llm.Message) error {
	if err := r.lazy.Ensure(ctx, sessionID); err != nil {
		return err
	}
	return r.st.ReplaceActive(ctx, sessionID, msgs)
}

// Ensure writes a new session's deferred row now, without messages (for
// changes that need the row, such as /title). Other ids are left alone.
func (r recorder) Ensure(ctx context.Context, sessionID string) error {
	return r.lazy.Ensure(ctx, sessionID)
}

// Pending reports whether the session's row is not yet written (a new
// session without messages).
func (r recorder) Pending(sessionID string) bool { return r.lazy.Pending(sessionID) }
