package session

import (
	"context"
	"errors"

	"github.com/hermes-go/hermes/internal/llm"
)

// ErrBusy is returned by operations that need an idle session.
var ErrBusy = errors.New("a turn is running: wait for it or interrupt it (Ctrl-C) first")

// ErrCompressionOff is returned by Compress when compression.enabled is false.
var ErrCompressionOff = errors.New("context compression is off (compression.enabled: false); turn it on with `hermes config set compression.enabled true`")

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

// Compress summarises the middle of the conversation now (/compress), as
// the agent does when the context passes compression.threshold; the
// first and last messages are kept (compression.protect_first_n,
// protect_last_n). It reports whether anything was summarised. The
// session must be idle; the summary call's notices reach subscribers.
func (s *Session) Compress(ctx context.Context) (bool, error) {
	if s.compactor == nil {
		return false, ErrCompressionOff
	}
	s.mu.Lock()
	busy := s.running != nil || len(s.queue) > 0
	s.mu.Unlock()
	if busy {
		return false, ErrBusy
	}
	if s.rt.opts.Lock != nil {
		unlock, err := s.rt.opts.Lock(ctx, s.rt.store, s.id)
		if err != nil {
			return false, err
		}
		defer unlock()
	}
	if err := s.reloadIfChanged(ctx); err != nil {
		return false, err
	}
	done, err := s.compactor.Compact(ctx, s.state, llm.Usage{}, true)
	if st, serr := s.rt.store.Session(context.WithoutCancel(ctx), s.id); serr == nil {
		s.seen = st.MessageCount
	}
	return done, err
}
