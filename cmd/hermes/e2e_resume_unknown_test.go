package main_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
)

// Regression (issue 8 follow-up): after a kill while a tool call ran, each
// resume added the "outcome unknown" result in memory only, so `sessions
// show` and `export` listed the call without a result. The first resume now
// stores it right after the call; a second resume adds no other.
func TestResumeStoresUnknownOutcomeOnce(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "checked"}, llmtest.Turn{Text: "still fine"})
	e.configureModel()
	st, err := store.Open(filepath.Join(e.home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// What a run killed while its tool call ran leaves behind.
	_, err = st.CreateSession(context.Background(), store.NewSession{Source: "oneshot", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "write the file"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "terminal", Arguments: `{"command":"sleep 9"}`}}},
	}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	e.mustRun("chat", "-Q", "-c", "-q", "status?")
	e.mustRun("chat", "-Q", "-c", "-q", "and now?")
	sessions := e.storedSessions()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(sessions))
	}
	msgs := sessions[0].msgs
	var unknown []int
	for i, m := range msgs {
		if m.Role == llm.RoleTool && m.ToolCallID == "call_w" {
			unknown = append(unknown, i)
			if m.Content != agent.UnknownOutcomeResult {
				t.Errorf("stored result = %q, want the unknown-outcome note", m.Content)
			}
		}
	}
	if len(unknown) != 1 || unknown[0] != 2 {
		var roles []string
		for _, m := range msgs {
			roles = append(roles, string(m.Role))
		}
		t.Fatalf("stored results of call_w at %v, want exactly one right after the call; rows: %s", unknown, strings.Join(roles, " "))
	}
	if out := e.mustRun("sessions", "export", sessions[0].ID).stdout; !strings.Contains(out, "outcome is unknown") {
		t.Errorf("export lacks the stored unknown-outcome result:\n%s", out)
	}
}
