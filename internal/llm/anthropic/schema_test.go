package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// Tools reach the wire as the Messages API wants them, on every call of
// the provider: name, description, the JSON Schema as written (nested
// properties, required, other keywords) with "type": "object" and
// "properties" filled in when missing, and cache_control on the last tool.
func TestToolsOnTheWire(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"file <path> & name"},` +
		`"opts":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}},` +
		`"required":["path"],"additionalProperties":false}`
	tools := []llm.ToolSpec{
		{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(schema)},
		{Name: "todo", Parameters: json.RawMessage(`{}`)},
	}
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "ok"}, llmtest.Turn{Text: "ok"})
	p := New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"})
	req := llm.Request{Model: "claude-sonnet-4", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Tools: tools}
	for range 2 {
		if _, err := run(t, p, req); err != nil {
			t.Fatal(err)
		}
	}
	var want0 map[string]any
	if err := json.Unmarshal([]byte(schema), &want0); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"name": "read_file", "description": "Read a file.", "input_schema": want0},
		{"name": "todo", "input_schema": map[string]any{"type": "object", "properties": map[string]any{}},
			"cache_control": map[string]any{"type": "ephemeral"}},
	}
	for i, r := range srv.Requests() {
		var body struct {
			Tools []map[string]any `json:"tools"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(body.Tools, want) {
			t.Fatalf("request %d: tools on the wire = %v\nwant %v", i+1, body.Tools, want)
		}
	}
}
