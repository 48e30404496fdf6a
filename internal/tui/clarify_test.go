package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// A clarify question is printed with its numbered choices; the next line
// typed answers it (a number picks that choice) and the turn goes on.
func TestClarifyQuestionAnsweredFromTheEditor(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "clarify", Args: `{"question":"Which color?","choices":["red","blue"]}`}}},
		llmtest.Turn{Text: "painting it blue"},
	)
	tm, out := start(t, w.options(t), 80, 20)
	tm.Type("paint")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.wait(t, "2. blue")
	tm.Type("2")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.wait(t, "painting it blue")
	if body := string(w.srv.Requests()[1].Body); !strings.Contains(body, `\"user_response\": \"blue\"`) {
		t.Fatalf("the model read: %s", body)
	}
}
