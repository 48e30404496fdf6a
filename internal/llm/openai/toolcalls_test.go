package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// sseBody renders tool-call deltas (index, id, name, arguments) as raw
// chat.completion.chunk frames, followed by a tool_calls finish and [DONE].
func sseBody(deltas ...[4]any) string {
	var b strings.Builder
	b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n")
	for _, d := range deltas {
		call := map[string]any{"index": d[0], "function": map[string]any{"name": d[2], "arguments": d[3]}}
		if id := d[1].(string); id != "" {
			call["id"], call["type"] = id, "function"
		}
		chunk := map[string]any{"id": "c1", "object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{call}}}}}
		data, _ := json.Marshal(chunk)
		b.WriteString("data: " + string(data) + "\n\n")
	}
	b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// TestStreamedToolCallResends replays, as raw SSE, the tool-call streams of
// providers that repeat function.name in every delta, re-send the complete
// arguments in the last delta, or send the same call twice with one id.
// Before the fix they produced "terminalterminalterminal" and
// `{"a":1}{"a":1}`.
func TestStreamedToolCallResends(t *testing.T) {
	type call struct{ id, name, args string }
	cases := []struct {
		name string
		body string
		want []call
	}{
		{"name repeated in every delta", sseBody(
			[4]any{0, "call_1", "terminal", ""},
			[4]any{0, "", "terminal", `{"command":`},
			[4]any{0, "", "terminal", `"ls -la"}`},
		), []call{{"call_1", "terminal", `{"command":"ls -la"}`}}},
		{"name repeated, two calls", sseBody(
			[4]any{0, "call_1", "skills_list", ""},
			[4]any{0, "", "skills_list", `{}`},
			[4]any{1, "call_2", "terminal", `{"command":"pwd"}`},
			[4]any{1, "", "terminal", ``},
		), []call{{"call_1", "skills_list", `{}`}, {"call_2", "terminal", `{"command":"pwd"}`}}},
		{"name sent growing", sseBody(
			[4]any{0, "call_1", "read", ""},
			[4]any{0, "", "read_file", `{"path":"a.md"}`},
		), []call{{"call_1", "read_file", `{"path":"a.md"}`}}},
		{"name split in pieces still joins", sseBody(
			[4]any{0, "call_1", "skills", ""},
			[4]any{0, "", "_list", `{}`},
		), []call{{"call_1", "skills_list", `{}`}}},
		{"arguments re-sent whole at the end", sseBody(
			[4]any{0, "call_1", "write_file", ""},
			[4]any{0, "", "", `{"path":"a.txt",`},
			[4]any{0, "", "", `"content":"x"}`},
			[4]any{0, "", "", `{"path":"a.txt","content":"x"}`},
		), []call{{"call_1", "write_file", `{"path":"a.txt","content":"x"}`}}},
		{"arguments re-sent whole with other spacing", sseBody(
			[4]any{0, "call_1", "terminal", `{"a":1}`},
			[4]any{0, "", "", `{"a": 1}`},
		), []call{{"call_1", "terminal", `{"a":1}`}}},
		{"same call twice with the same id", sseBody(
			[4]any{0, "call_9", "terminal", `{"command":"date"}`},
			[4]any{1, "call_9", "terminal", `{"command":"date"}`},
		), []call{{"call_9", "terminal", `{"command":"date"}`}}},
		{"same call twice at the same index", sseBody(
			[4]any{0, "call_9", "terminal", `{"command":"date"}`},
			[4]any{0, "call_9", "terminal", `{"command":"date"}`},
		), []call{{"call_9", "terminal", `{"command":"date"}`}}},
		{"cumulative arguments", sseBody(
			[4]any{0, "call_1", "terminal", `{"comm`},
			[4]any{0, "", "", `{"command":"ls"}`},
		), []call{{"call_1", "terminal", `{"command":"ls"}`}}},
		{"every call at index 0 with new ids", sseBody(
			[4]any{0, "call_1", "terminal", `{"command":"a"}`},
			[4]any{0, "call_2", "terminal", `{"command":"b"}`},
		), []call{{"call_1", "terminal", `{"command":"a"}`}, {"call_2", "terminal", `{"command":"b"}`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Turn{RawBody: tc.body})
			resp, err := run(t, newProvider(srv.URL), userHi)
			if err != nil {
				t.Fatal(err)
			}
			var got []call
			for _, c := range resp.Message.ToolCalls {
				got = append(got, call{c.ID, c.Name, c.Arguments})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("calls = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("call %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestStreamedArgumentDeltasOnce checks that the deltas a display sees
// spell the arguments once when the provider re-sends them whole.
func TestStreamedArgumentDeltasOnce(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{RawBody: sseBody(
		[4]any{0, "call_1", "terminal", ""},
		[4]any{0, "", "terminal", `{"command":`},
		[4]any{0, "", "terminal", `"ls"}`},
		[4]any{0, "", "terminal", `{"command":"ls"}`},
	)})
	p := newProvider(srv.URL)
	st, err := p.Stream(t.Context(), userHi)
	if err != nil {
		t.Fatal(err)
	}
	var shown strings.Builder
	if _, err := llm.Accumulate(st, func(ev llm.Event) {
		if ev.Type == llm.EventToolCallDelta {
			shown.WriteString(ev.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if shown.String() != `{"command":"ls"}` {
		t.Errorf("streamed deltas = %q", shown.String())
	}
}
