package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// questionDoneMsg says the clarify question id was answered, timed out
// or its turn ended.
type questionDoneMsg struct{ id string }

// onQuestion shows a clarify question above the editor; the next line
// the person submits answers it (submit).
func (m *Model) onQuestion(ev session.Event) tea.Cmd {
	q := ev.Question
	m.question = q.ID
	lines := []string{m.styles.warn.Render("? " + termsafe.Clean(q.Question))}
	for i, c := range q.Choices {
		lines = append(lines, fmt.Sprintf("  %d. %s", i+1, termsafe.Clean(c)))
	}
	hint := "type your answer and press Enter"
	if len(q.Choices) > 0 {
		hint = "type a number or your own answer and press Enter"
	}
	lines = append(lines, m.styles.dim.Render("  ("+hint+")"))
	done, id := ev.ApprovalDone, q.ID
	wait := func() tea.Msg { <-done; return questionDoneMsg{id: id} }
	return tea.Batch(m.printLines(lines...), wait)
}

// answerQuestion sends text as the answer of the pending question; it
// reports whether one was waiting.
func (m *Model) answerQuestion(text string) bool {
	if m.question == "" {
		return false
	}
	id := m.question
	m.question = ""
	return m.sess.Answer(id, text)
}
