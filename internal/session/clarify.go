package session

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hermes-go/hermes/internal/tool"
)

// DefaultClarifyTimeout is how long a clarify question waits for its
// answer when agent.clarify_timeout is unset (Hermes: 3600 s).
const DefaultClarifyTimeout = time.Hour

// Question is a clarify question waiting for the person's answer
// (a ClarifyRequest event; answer with Session.Answer).
type Question struct {
	ID       string
	Question string
	Choices  []string // empty: an open question
	answer   chan reply
}

// reply is the person's answer to a Question; ok is false when they
// gave none (Session.Decline).
type reply struct {
	text string
	ok   bool
}

// ask is the clarify tool's Asker: it puts q to the session's interactive
// subscribers (SubscribeOptions.Approver) with a ClarifyRequest event and
// waits for Session.Answer, the end of the turn or agent.clarify_timeout.
// A session nobody interactive watches (-z, chat -q, the API server, cron,
// a delegated child) gets tool.ErrNoUser at once.
func (rt *Runtime) ask(ctx context.Context, q tool.Question) (string, error) {
	s := rt.lookup(q.SessionID)
	if s == nil || !s.hasApprover() {
		return "", tool.ErrNoUser
	}
	rt.mu.Lock()
	rt.turnSeq++
	id := "q" + strconv.Itoa(rt.turnSeq)
	rt.mu.Unlock()
	p := &Question{ID: id, Question: q.Question, Choices: q.Choices, answer: make(chan reply, 1)}
	done := make(chan struct{})
	s.mu.Lock()
	s.questions = append(s.questions, p)
	turn := ""
	if s.running != nil {
		turn = s.running.ID
	}
	s.publishLocked(Event{TurnID: turn, Kind: ClarifyRequest, Question: p, ApprovalDone: done, Text: q.Question})
	s.mu.Unlock()
	defer func() {
		close(done)
		s.mu.Lock()
		s.questions = slices.DeleteFunc(s.questions, func(x *Question) bool { return x == p })
		s.mu.Unlock()
	}()
	wait := DefaultClarifyTimeout
	if n := rt.cfg.Agent.ClarifyTimeout; n > 0 {
		wait = time.Duration(n) * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-p.answer:
		if !r.ok {
			return "", tool.ErrNoUser
		}
		return r.text, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timer.C:
		return "", fmt.Errorf("nobody answered within %s (agent.clarify_timeout); decide yourself and say what you assumed", wait)
	}
}

// PendingQuestion is the oldest clarify question waiting for an answer,
// or nil.
func (s *Session) PendingQuestion() *Question {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.questions) == 0 {
		return nil
	}
	return s.questions[0]
}

// Answer answers the pending clarify question id ("" = the oldest) with
// text: a number picks that choice (tool.ChoiceAnswer). It reports
// whether a question was waiting.
func (s *Session) Answer(id, text string) bool {
	return s.resolve(id, func(q *Question) reply { return reply{text: tool.ChoiceAnswer(text, q.Choices), ok: true} })
}

// Decline withdraws the pending clarify question id ("" = the oldest)
// without an answer (the person's input ended): the model is told there
// is nobody to ask. It reports whether a question was waiting.
func (s *Session) Decline(id string) bool {
	return s.resolve(id, func(*Question) reply { return reply{} })
}

func (s *Session) resolve(id string, r func(*Question) reply) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.questions {
		if id != "" && q.ID != id {
			continue
		}
		s.questions = slices.Delete(s.questions, i, i+1)
		q.answer <- r(q)
		return true
	}
	return false
}
