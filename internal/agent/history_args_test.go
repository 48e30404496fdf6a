package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/tool"
)

// Malformed arguments seen from real models: a regex with "\d", a raw
// newline in a string, the object double-encoded as a string (with a
// number as a string), and truncated JSON. The first three run repaired
// and say so; the truncated one does not run. Every request, including the
// one after the tool results, reaches a strict server (HTTP 400 on invalid
// arguments in the history) with valid JSON, and the stored row keeps what
// the model sent.
func TestMalformedArgumentsRepairedOrRefusedAndHistoryStaysValid(t *testing.T) {
	var got []string
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result {
		got = append(got, string(call.Args))
		return tool.Result{Content: "ran"}
	}}
	truncated := `{"command":"rm -rf /tm`
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "re", Name: "echo", Args: `{"p":"\d+"}`},
			{ID: "nl", Name: "echo", Args: "{\"s\":\"a\nb\"}"},
			{ID: "dbl", Name: "echo", Args: `"{\"n\":\"2\"}"`},
			{ID: "cut", Name: "echo", Args: truncated},
		}},
		llmtest.Turn{Text: "done"},
	)
	srv.StrictToolArguments()
	rec, sid := openStore(t)
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(echo), Recorder: rec})
	if _, err := a.RunTurn(context.Background(), &Session{ID: sid}, "go"); err != nil {
		t.Fatalf("turn failed (a strict server rejects invalid arguments in the history): %v", err)
	}
	want := []string{`{"p":"\\d+"}`, `{"s":"a\nb"}`, `{"n":2}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tool ran with %q, want %q (the truncated call must not run)", got, want)
	}
	reqs := requests(t, srv)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	results := map[string]string{}
	for _, m := range reqs[1].Messages {
		for _, tc := range m.ToolCalls {
			if !json.Valid([]byte(tc.Function.Arguments)) {
				t.Errorf("call %s sent back with invalid arguments %q", tc.ID, tc.Function.Arguments)
			}
			if tc.ID == "cut" && tc.Function.Arguments != "{}" {
				t.Errorf("unrepairable arguments sent back as %q, want {}", tc.Function.Arguments)
			}
		}
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Text()
		}
	}
	for _, id := range []string{"re", "nl", "dbl"} {
		if !strings.Contains(results[id], "repaired") || !strings.HasSuffix(results[id], "ran") {
			t.Errorf("result of %s = %q, want a repair note and the tool's output", id, results[id])
		}
	}
	if r := results["cut"]; !strings.Contains(r, "truncated") || !strings.Contains(r, "not executed") || !strings.Contains(r, truncated) {
		t.Errorf("truncated call result = %q", r)
	}
	stored, err := rec.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range stored {
		for _, tc := range m.ToolCalls {
			found = found || (tc.ID == "cut" && tc.Arguments == truncated)
		}
	}
	if !found {
		t.Error("the stored row lost the original arguments text of the unrepairable call")
	}
}

// A session stored by an older run with invalid arguments in its history
// still resumes against a strict server.
func TestResumeWithStoredBadArguments(t *testing.T) {
	srv, prov := newFakeModel(t, llmtest.Turn{Text: "resumed"})
	srv.StrictToolArguments()
	rec, sid := openStore(t)
	ctx := context.Background()
	old := []llm.Message{
		{Role: llm.RoleUser, Content: "list"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"a":1}{"a":1}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "echo", Content: "error: not JSON", IsError: true},
		{Role: llm.RoleAssistant, Content: "sorry"},
	}
	for _, m := range old {
		if _, err := rec.AppendMessage(ctx, sid, m); err != nil {
			t.Fatal(err)
		}
	}
	history, err := rec.Messages(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Provider: prov, Model: "fake", Recorder: rec})
	res, err := a.RunTurn(ctx, &Session{ID: sid, History: history}, "again")
	if err != nil || res.Text != "resumed" {
		t.Fatalf("resume = %+v, %v", res, err)
	}
}
