package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// A tool's JSON Schema reaches the wire as written: properties (nested
// ones included), required and other keywords, with "type": "object".
func TestToolSchemaOnTheWire(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"file <path> & name"},` +
		`"opts":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}},` +
		`"required":["path"],"additionalProperties":false}`
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "ok"})
	req := llm.Request{Model: "claude-sonnet-4", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools: []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(schema)}}}
	if _, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"}), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(schema), &want); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 1 || !reflect.DeepEqual(body.Tools[0].InputSchema, want) {
		t.Fatalf("tools on the wire = %+v\nwant input_schema %v", body.Tools, want)
	}
}
