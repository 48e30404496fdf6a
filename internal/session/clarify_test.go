package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// toolResult is the content of the tool message answering callID in a
// chat request.
func toolResult(t *testing.T, r llmtest.Request, callID string) string {
	t.Helper()
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, m := range body.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Text()
		}
	}
	t.Fatalf("no result for %s in %s", callID, r.Body)
	return ""
}

func clarifyCall(id, args string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: id, Name: "clarify", Args: args}}}
}

// TestClarifyAsksThePersonAndWaits: the question reaches an interactive
// subscriber with its choices; a number answers with that choice, and
// the model reads it.
func TestClarifyAsksThePersonAndWaits(t *testing.T) {
	srv := llmtest.NewServer(t,
		clarifyCall("c1", `{"question":"Which database?","choices":["PostgreSQL","SQLite"]}`),
		llmtest.Turn{Text: "using SQLite"})
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{Approver: true})
	defer sub.Close()
	turn, _, _ := s.Send(context.Background(), "set up storage", SendOptions{})
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == Final || ev.Kind == Error {
			t.Fatalf("the turn ended without asking: %v %q", ev.Kind, ev.Text)
		}
		if ev.Kind == ClarifyRequest {
			if ev.Question.Question != "Which database?" || strings.Join(ev.Question.Choices, "|") != "PostgreSQL|SQLite" {
				t.Fatalf("question %+v", ev.Question)
			}
			if !s.Answer(ev.Question.ID, "2") {
				t.Fatal("no question was waiting")
			}
			break
		}
	}
	if res, err := turn.Wait(context.Background()); err != nil || res.Text != "using SQLite" {
		t.Fatalf("%q %v", res.Text, err)
	}
	got := toolResult(t, srv.Requests()[1], "c1")
	if !strings.Contains(got, `"user_response": "SQLite"`) {
		t.Fatalf("the model read %s", got)
	}
	if s.PendingQuestion() != nil {
		t.Fatal("the answered question is still pending")
	}
}

// TestClarifyWithoutAPersonAnswersAtOnce: a headless run (no interactive
// subscriber: -z, chat -q, the API server) is told at once that nobody
// can answer; a question with 50 choices is refused to the model.
func TestClarifyWithoutAPersonAnswersAtOnce(t *testing.T) {
	many := make([]string, 50)
	for i := range many {
		many[i] = "option"
	}
	b, _ := json.Marshal(map[string]any{"question": "pick", "choices": many})
	srv := llmtest.NewServer(t,
		clarifyCall("c1", `{"question":"Which database?"}`),
		clarifyCall("c2", string(b)),
		llmtest.Turn{Text: "assumed SQLite"})
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "api"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{}) // watching, but nobody to answer
	defer sub.Close()
	turn, _, _ := s.Send(context.Background(), "set up storage", SendOptions{})
	if res, err := turn.Wait(context.Background()); err != nil || res.Text != "assumed SQLite" {
		t.Fatalf("%q %v", res.Text, err)
	}
	if got := toolResult(t, srv.Requests()[1], "c1"); !strings.Contains(got, "no user to ask") {
		t.Fatalf("headless clarify result: %s", got)
	}
	if got := toolResult(t, srv.Requests()[2], "c2"); !strings.Contains(got, "50 choices given; offer at most 4") {
		t.Fatalf("50 choices result: %s", got)
	}
}

// TestClarifyWithdrawnWhenTheTurnIsCancelled: cancelling the turn while
// the question waits ends the wait (no hang) and the question is gone.
func TestClarifyWithdrawnWhenTheTurnIsCancelled(t *testing.T) {
	srv := llmtest.NewServer(t, clarifyCall("c1", `{"question":"Go on?"}`))
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "tui"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{Approver: true})
	defer sub.Close()
	turn, _, _ := s.Send(context.Background(), "work", SendOptions{})
	var done <-chan struct{}
	for done == nil {
		ev, err := sub.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == ClarifyRequest {
			done = ev.ApprovalDone
		}
	}
	s.Cancel()
	<-done
	if _, err := turn.Wait(context.Background()); err == nil {
		t.Fatal("the cancelled turn succeeded")
	}
	if s.PendingQuestion() != nil || s.Answer("", "late") {
		t.Fatal("the question outlived its turn")
	}
}
