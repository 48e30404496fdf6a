package session

import (
	"context"
	"errors"

	"github.com/hermes-go/hermes/internal/llm"
)

// ErrBusy is returned by operations that need an idle session.
var ErrBusy = errors.New("a turn is running: wait for it or interrupt it (Ctrl-C) first")

// ErrNothingToUndo is returned by Undo when the session has no user message.
var ErrNothingToUndo = errors.New("nothing to undo: the session has no message yet")

// Undo removes the last exchange: the last user message and everything
// after it (the answer, its tool calls and results). The removed messages
// are archived in state.db (out of the conversation, still searchable),
// as context compression does. It returns the removed user message's text
// (for /retry). The session must be idle.
func (s *Session) Undo(ctx context.Context) (string, error) {
	s.mu.Lock()
	if s.running != nil || len(s.queue) > 0 {
		s.mu.Unlock()
		return "", ErrBusy
	}
	h := s.state.History
	s.mu.Unlock()
	last := -1
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleUser {
			last = i
			break
		}
	}
	if last < 0 {
		return "", ErrNothingToUndo
	}
	kept := append([]llm.Message(nil), h[:last]...)
	if !s.rt.lazy.Pending(s.id) {
		if err := s.rt.store.ReplaceActive(ctx, s.id, kept); err != nil {
			return "", err
		}
		if st, err := s.rt.store.Session(ctx, s.id); err == nil {
			s.seen = st.MessageCount
		}
	}
	s.mu.Lock()
	s.state.History = kept
	s.mu.Unlock()
	return h[last].Content, nil
}
