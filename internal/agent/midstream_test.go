package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// A connection lost in the middle of an answer (after some text arrived)
// is retried like a 5xx, with one progress line per retry, and the stored
// answer is the complete one.
func TestConnectionClosedMidStreamIsRetried(t *testing.T) {
	srv, prov := newFakeModel(t,
		llmtest.Turn{Text: "a partial answer that is cut", ChunkSize: 4, CutAfterFrames: 5},
		llmtest.Turn{Text: "the whole answer"},
	)
	rec, sid := openStore(t)
	var log eventLog
	a := New(Options{Provider: prov, Model: "fake", Recorder: rec, OnEvent: log.add})
	res, err := a.RunTurn(context.Background(), &Session{ID: sid}, "hi")
	if err != nil || res.Text != "the whole answer" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	var retries []string
	for _, ev := range log.events {
		if ev.Kind == EventRetry {
			retries = append(retries, ev.Text)
		}
	}
	if len(retries) != 1 || !strings.Contains(retries[0], "retrying") {
		t.Errorf("retry events = %q", retries)
	}
	stored, _ := rec.Messages(context.Background(), sid)
	if last := stored[len(stored)-1]; last.Content != "the whole answer" {
		t.Errorf("stored answer = %q", last.Content)
	}
}
