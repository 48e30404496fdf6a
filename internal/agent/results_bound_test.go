package agent

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/tool"
)

// TestLargeToolResultIsBoundedAndShrinksWithAge: a 150,000-character tool
// result is sent as at most MaxResultChars (head and tail, the whole in
// the spill file), and once it is older than RecentTurns user turns it
// is re-sent at OldResultChars, so it no longer dominates later requests.
func TestLargeToolResultIsBoundedAndShrinksWithAge(t *testing.T) {
	big := "HEAD-" + strings.Repeat("0123456789", 15_000) + "-TAIL" // 150,010 characters
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_big", Name: "dump", Args: `{}`}}},
		llmtest.Turn{Text: "dumped"},
		llmtest.Turn{Text: "second"},
		llmtest.Turn{Text: "third"},
	)
	dump := &funcTool{name: "dump", run: func(context.Context, tool.Call) tool.Result { return tool.Result{Content: big} }}
	spillDir := t.TempDir()
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(dump), SpillDir: spillDir})
	s := &Session{ID: "s1", System: "sys"}
	for _, prompt := range []string{"dump it", "and then?", "and now?"} {
		if _, err := a.RunTurn(context.Background(), s, prompt); err != nil {
			t.Fatal(err)
		}
	}
	resultIn := func(i int) string {
		for _, m := range requests(t, srv)[i].Messages {
			if m.ToolCallID == "call_big" {
				return m.Content.(string)
			}
		}
		t.Fatalf("request %d lacks the result", i)
		return ""
	}
	sent := resultIn(1)
	if n := len([]rune(sent)); n > MaxResultChars+500 || n < MaxResultChars {
		t.Errorf("the result was sent as %d characters, want about %d", n, MaxResultChars)
	}
	if !strings.HasPrefix(sent, "HEAD-") || !strings.HasSuffix(sent, "-TAIL") || !strings.Contains(sent, spillDir) {
		t.Errorf("want head, tail and the spill file named: %.200q … %.200q", sent, sent[len(sent)-200:])
	}
	if n := len([]rune(resultIn(2))); n < MaxResultChars {
		t.Errorf("the previous turn's result was shrunk already (%d characters)", n)
	}
	old := resultIn(3)
	if n := len([]rune(old)); n > OldResultChars+500 || !strings.Contains(old, "earlier turn") {
		t.Errorf("a result two turns old was re-sent as %d characters: %.300q", n, old)
	}
	if body := len(srv.Requests()[3].Body); body > 10_000 {
		t.Errorf("the third turn's request is %d bytes; the old result still dominates it", body)
	}
	data, err := os.ReadFile(spillDir + "/s1-call_big.txt")
	if err != nil || string(data) != big {
		t.Errorf("the spill file must hold the whole result (%d bytes, %v)", len(data), err)
	}
	if s.History[2].Content != big {
		t.Errorf("the history must keep the whole result")
	}
}
