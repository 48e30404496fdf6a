package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// signalRecorder forwards to the store and reports each stored tool result.
type signalRecorder struct {
	store.Store
	results chan string
}

func (r signalRecorder) AppendMessage(ctx context.Context, id string, m llm.Message) (int64, error) {
	seq, err := r.Store.AppendMessage(ctx, id, m)
	if m.Role == llm.RoleTool {
		r.results <- m.ToolCallID
	}
	return seq, err
}

// Regression (issue 8, crash and resume): the results of a batch were
// stored only when the whole batch had finished, so a kill while the slow
// call ran lost the fast call's finished result (its write_file had
// happened) and the model was told it was cancelled. Now the fast call's
// result is in the store while the slow call still runs.
func TestToolResultStoredAsSoonAsItsCallFinishes(t *testing.T) {
	st, sid := openStore(t)
	rec := signalRecorder{Store: st, results: make(chan string, 4)}
	sawFast := make(chan bool, 1)
	fast := &funcTool{name: "fast", parallel: true, run: func(ctx context.Context, call tool.Call) tool.Result {
		return tool.Result{Content: "fast done"}
	}}
	slow := &funcTool{name: "slow", parallel: true, run: func(ctx context.Context, call tool.Call) tool.Result {
		select {
		case id := <-rec.results:
			sawFast <- id == "f"
		case <-time.After(time.Until(waitfor.Deadline(t))): // the old code stores nothing until this call returns
			sawFast <- false
		}
		return tool.Result{Content: "slow done"}
	}}
	_, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "s", Name: "slow", Args: `{}`}, {ID: "f", Name: "fast", Args: `{}`}}},
		llmtest.Turn{Text: "both done"},
	)
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(fast, slow), Recorder: rec})
	s := &Session{ID: sid}
	if _, err := a.RunTurn(context.Background(), s, "go"); err != nil {
		t.Fatal(err)
	}
	if !<-sawFast {
		t.Fatal("the fast call's result was not stored while the slow call of the same batch ran")
	}
	// The in-memory history keeps call order (s before f), like a resume.
	var ids []string
	for _, m := range s.History {
		if m.Role == llm.RoleTool {
			ids = append(ids, m.ToolCallID)
		}
	}
	if strings.Join(ids, ",") != "s,f" {
		t.Fatalf("results in history = %v, want call order s,f", ids)
	}
	stored, err := st.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	repaired := RepairHistory(stored)
	for i := range repaired {
		if repaired[i].Content != s.History[i].Content || repaired[i].Role != s.History[i].Role {
			t.Fatalf("resumed history differs from the live one at %d: %+v vs %+v", i, repaired[i], s.History[i])
		}
	}
}

// Regression (issue 8): a turn that failed before any answer (HTTP 500,
// context error) left its user message last, and the next turn stored an
// invented assistant message "[no answer …]" before its own. Now nothing is
// invented: the stored rows are the two user messages, and the provider
// gets them as one user message.
func TestFailedTurnGetsNoInventedAnswer(t *testing.T) {
	srv, prov := newFakeModel(t, llmtest.Turn{Status: 400, Error: "upstream broke"}, llmtest.Turn{Text: "answer to both"})
	st, sid := openStore(t)
	a := New(Options{Provider: prov, Model: "fake", Recorder: st})
	if _, err := a.RunTurn(context.Background(), &Session{ID: sid}, "first question"); err == nil {
		t.Fatal("the first turn should fail")
	}
	stored, err := st.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	// A new process resumes from the store.
	res, err := a.RunTurn(context.Background(), &Session{ID: sid, History: stored}, "second question")
	if err != nil || res.Text != "answer to both" {
		t.Fatalf("second turn: %+v, %v", res, err)
	}
	stored, err = st.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range stored {
		roles = append(roles, string(m.Role))
		if m.Role == llm.RoleAssistant && m.Content != "answer to both" {
			t.Errorf("invented assistant message stored: %q", m.Content)
		}
	}
	if strings.Join(roles, ",") != "user,user,assistant" {
		t.Errorf("stored roles = %v, want user,user,assistant", roles)
	}
	msgs := requests(t, srv)[1].Messages
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.Text())
		}
		if m.Role == "assistant" {
			t.Errorf("request carries an assistant message the provider never sent: %q", m.Text())
		}
	}
	if len(users) != 1 || !strings.Contains(users[0], "first question") || !strings.HasSuffix(users[0], "second question") {
		t.Errorf("user messages sent = %q, want one holding both questions", users)
	}
}
