package agent

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/tool"
)

// One 30,000-character tool result with a 4,000-token window: compression
// has nothing to summarise, so before the fix the provider's overflow error
// ended the turn and every later turn. Now the result is cut in the request
// (head, tail, marker with the spill file), the person is told once, the
// stored row stays whole and the session goes on.
func TestOversizedToolResultIsCutInTheRequest(t *testing.T) {
	big := strings.Repeat("0123456789", 3000)
	dump := &funcTool{name: "dump", run: func(ctx context.Context, call tool.Call) tool.Result {
		return tool.Result{Content: "HEAD" + big + "TAIL"}
	}}
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "d1", Name: "dump", Args: `{}`}}},
		llmtest.Turn{Text: "seen"},
		llmtest.Turn{Text: "still fine"},
	)
	srv.ContextLimit(16_000) // bytes: a 4,000-token window
	rec, sid := openStore(t)
	var log eventLog
	spill := t.TempDir()
	comp := NewCompressor(CompressorOptions{Provider: prov, Model: "fake", ContextWindow: 4000, Rewriter: storeRewriter{rec},
		Notice: func(s string) { log.add(Event{Kind: EventNotice, Text: s}) }, SpillDir: spill})
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(dump), Recorder: rec, Compactor: comp, OnEvent: log.add})
	sess := &Session{ID: sid}
	for i, want := range []string{"seen", "still fine"} {
		res, err := a.RunTurn(context.Background(), sess, "turn")
		if err != nil || res.Text != want {
			t.Fatalf("turn %d = %+v, %v; notices %q", i+1, res, err, log.notices())
		}
	}
	reqs := requests(t, srv)
	sent := ""
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			sent = m.Text()
		}
	}
	if !strings.HasPrefix(sent, "HEAD") || !strings.HasSuffix(sent, "TAIL") || !strings.Contains(sent, "TRUNCATED") || !strings.Contains(sent, spill) {
		t.Errorf("tool result sent as %.300q…", sent)
	}
	told := 0
	for _, n := range log.notices() {
		if strings.Contains(n, "too large for the model's context window") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("told the person %d times, want once: %q", told, log.notices())
	}
	stored, _ := rec.Messages(context.Background(), sid)
	whole := false
	for _, m := range stored {
		whole = whole || (m.Role == llm.RoleTool && m.Content == "HEAD"+big+"TAIL")
	}
	if !whole {
		t.Error("the stored tool result is not whole")
	}
	entries, _ := os.ReadDir(spill)
	if len(entries) != 1 {
		t.Fatalf("spill dir holds %d files", len(entries))
	}
}
