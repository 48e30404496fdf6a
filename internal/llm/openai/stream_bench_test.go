package openai

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// BenchmarkStream measures one streamed response of 4 KB of text in
// 16-byte chunks plus one tool call, over loopback HTTP.
func BenchmarkStream(b *testing.B) {
	turn := llmtest.Turn{Text: strings.Repeat("incident ", 455), ChunkSize: 16,
		ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path":"runbook.md"}`}}}
	turns := make([]llmtest.Turn, b.N)
	for i := range turns {
		turns[i] = turn
	}
	srv := llmtest.NewServer(b, turns...)
	p := New(Config{Name: "custom", BaseURL: srv.URL})
	b.ResetTimer()
	for range b.N {
		st, err := p.Stream(context.Background(), userHi)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := llm.Accumulate(st, nil); err != nil {
			b.Fatal(err)
		}
	}
}
