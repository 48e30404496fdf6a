package acp

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// BenchmarkPromptRoundTrip measures session/prompt from the client's
// request to its response, through the adapter, the session runtime, the
// agent, state.db and an instant fake model (one streamed text answer).
// A new session is opened (outside the timed prompts) every
// promptsPerSession prompts, so the history stays that of a short chat.
// It reports the p50 and p99 latency of the prompts.
//
//	go test -run '^$' -bench PromptRoundTrip -benchtime 300x ./internal/acp/
func BenchmarkPromptRoundTrip(b *testing.B) {
	w := newWorld(b)
	w.srv.SetResponder(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "ok"} })
	c := w.connect(sdk.ClientCapabilities{})
	c.prompt(b, c.newSession(b, w.work), "warm up")
	const promptsPerSession = 10
	var req sdk.PromptRequest
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%promptsPerSession == 0 {
			req = sdk.PromptRequest{SessionId: sdk.SessionId(c.newSession(b, w.work)), Prompt: []sdk.ContentBlock{sdk.TextBlock("hello")}}
		}
		start := time.Now()
		resp, err := c.conn.Prompt(context.Background(), req)
		if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
			b.Fatalf("prompt: %v %q", err, resp.StopReason)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	pct := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
