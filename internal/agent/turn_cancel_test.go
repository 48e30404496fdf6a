package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/tool"
)

// Regression (found by cmd/hermes TestSigtermDuringToolCallStoresCancelledResult):
// a tool that returns its own error when the turn is interrupted, as the
// terminal tool does for a command it killed ("killed by SIGTERM"), must
// still be stored with the synthetic cancelled result, so the model reads
// an interruption and not a failure of the command; what the tool returned
// is kept after it.
func TestInterruptedToolKeepsItsOutputAfterCancelledResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	killed := &funcTool{name: "long_job", run: func(ctx context.Context, call tool.Call) tool.Result {
		cancel()
		<-ctx.Done()
		return tool.Result{Content: "partial output\nkilled by SIGTERM", IsError: true}
	}}
	_, prov := newFakeModel(t, llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "j", Name: "long_job", Args: `{}`}}})
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(killed)})
	s := &Session{ID: "s1"}
	if _, err := a.RunTurn(ctx, s, "run it"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	last := s.History[len(s.History)-1]
	if last.Role != llm.RoleTool || last.ToolCallID != "j" || !last.IsError {
		t.Fatalf("last message = %+v, want the error result of call j", last)
	}
	if !strings.HasPrefix(last.Content, CancelledResult) || !strings.Contains(last.Content, "partial output") {
		t.Errorf("interrupted result = %q, want %q followed by the tool's own output", last.Content, CancelledResult)
	}
}
