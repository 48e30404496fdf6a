package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

// BenchmarkAppendMessage measures one durable append (a transaction with
// fsync, both search indexes updated) of a typical tool-call message.
func BenchmarkAppendMessage(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	s, err := st.CreateSession(ctx, NewSession{})
	if err != nil {
		b.Fatal(err)
	}
	m := llm.Message{Role: llm.RoleAssistant, Content: "Checking the payments-api rollout before restarting nginx on db-3.",
		ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "terminal", Arguments: `{"command":"kubectl rollout status deploy/payments-api"}`}}}
	for b.Loop() {
		if _, err := st.AppendMessage(ctx, s.ID, m); err != nil {
			b.Fatal(err)
		}
	}
}
