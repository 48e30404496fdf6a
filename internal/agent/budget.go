package agent

import (
	"context"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
)

// turnBudget is the model-call budget of one user turn, shared with the
// subagents the turn delegates to (delegate_task): their calls count
// against the parent's max turns, and their usage joins the parent
// turn's (Hermes: children count against the parent's iteration budget).
type turnBudget struct {
	mu       sync.Mutex
	left     int       // model calls with tools still allowed
	usage    llm.Usage // subagents' usage, added to the turn's result
	apiCalls int
}

type budgetKey struct{}

// withBudget returns ctx carrying the turn budget: the one ctx already
// carries (a subagent's turn inside its parent's tool call), else a new
// one of maxTurns calls; own reports whether it is new.
func withBudget(ctx context.Context, maxTurns int) (context.Context, *turnBudget, bool) {
	if b, ok := ctx.Value(budgetKey{}).(*turnBudget); ok {
		return ctx, b, false
	}
	b := &turnBudget{left: maxTurns}
	return context.WithValue(ctx, budgetKey{}, b), b, true
}

// take spends one model call with tools; false when none is left.
func (b *turnBudget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left <= 0 {
		return false
	}
	b.left--
	return true
}

// addChild adds a subagent turn's usage.
func (b *turnBudget) addChild(u llm.Usage, apiCalls int) {
	b.mu.Lock()
	b.usage = b.usage.Add(u)
	b.apiCalls += apiCalls
	b.mu.Unlock()
}

// children returns the subagents' usage so far.
func (b *turnBudget) children() (llm.Usage, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.usage, b.apiCalls
}
