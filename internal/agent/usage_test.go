package agent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

// usageCounter is the session store counting its separate AddUsage calls.
type usageCounter struct {
	store.Store
	addUsage atomic.Int32
}

func (u *usageCounter) AddUsage(ctx context.Context, id string, us llm.Usage, apiCalls int) error {
	u.addUsage.Add(1)
	return u.Store.AddUsage(ctx, id, us, apiCalls)
}

// With a recorder that stores an answer with its usage (the session
// store), each model call's usage is written together with the answer, not
// in a write of its own, and the session's totals still count every call.
func TestAnswerStoredWithItsUsage(t *testing.T) {
	st, sid := openStore(t)
	rec := &usageCounter{Store: st}
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result { return tool.Result{Content: "ok"} }}
	_, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "echo", Args: `{}`}}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 7}},
		llmtest.Turn{Text: "done", Usage: llm.Usage{InputTokens: 120, OutputTokens: 3}},
	)
	a := New(Options{Provider: prov, Model: "fake", Recorder: rec, Tools: tool.NewRegistry(echo)})
	if _, err := a.RunTurn(context.Background(), &Session{ID: sid}, "echo once"); err != nil {
		t.Fatal(err)
	}
	if n := rec.addUsage.Load(); n != 0 {
		t.Errorf("%d separate AddUsage writes, want 0 (usage goes with the answer)", n)
	}
	got, err := st.Session(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage.InputTokens != 220 || got.Usage.OutputTokens != 10 || got.APICallCount != 2 || got.MessageCount != 4 {
		t.Fatalf("stored session: usage %+v, %d API calls, %d messages; want 220/10 tokens, 2 calls, 4 messages",
			got.Usage, got.APICallCount, got.MessageCount)
	}
}
