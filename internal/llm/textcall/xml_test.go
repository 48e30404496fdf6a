package textcall

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExtractOtherForms covers the Anthropic-XML <function_calls> form that
// Ollama-served DeepSeek/GLM/Kimi models write as text, and a message that
// is only a JSON call object; and the texts that show or discuss such a
// call, which must not run.
func TestExtractOtherForms(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      []string // "name args" per call, args compacted
		remaining string
	}{
		{"xml", "<function_calls>\n<invoke name=\"terminal\">\n<parameter name=\"command\">ls -la</parameter>\n</invoke>\n</function_calls>",
			[]string{`terminal {"command":"ls -la"}`}, ""},
		{"xml with prose before, two invokes, json parameter",
			"Let me look.\n<function_calls>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a.md</parameter>\n<parameter name=\"offset\">3</parameter>\n</invoke>\n<invoke name=\"write_file\"><parameter name=\"path\">b</parameter><parameter name=\"content\">x &amp; y\nz</parameter></invoke>\n</function_calls>\n",
			[]string{`read_file {"offset":"3","path":"a.md"}`, `write_file {"content":"x \u0026 y\nz","path":"b"}`}, "Let me look."},
		{"xml closing tag cut by a stop sequence", "<function_calls><invoke name=\"terminal\"><parameter name=\"command\">pwd</parameter></invoke>",
			[]string{`terminal {"command":"pwd"}`}, ""},
		{"xml object parameter", "<function_calls><invoke name=\"terminal\"><parameter name=\"env\">{\"A\": 1}</parameter></invoke></function_calls>",
			[]string{`terminal {"env":{"A":1}}`}, ""},
		{"bare json", `{"name": "terminal", "arguments": {"command": "date"}}`, []string{`terminal {"command":"date"}`}, ""},
		{"bare json with spaces and parameters", "\n  {\"name\":\"read_file\",\"parameters\":{\"path\":\"x\"}}  \n", []string{`read_file {"path":"x"}`}, ""},
		{"bare openai shape", `{"type":"function","function":{"name":"terminal","arguments":"{\"command\":\"id\"}"}}`, []string{`terminal {"command":"id"}`}, ""},
		// Negatives: shown or discussed, not run.
		{"xml in a code fence", "Use this format:\n```xml\n<function_calls><invoke name=\"terminal\"><parameter name=\"command\">rm -rf /</parameter></invoke></function_calls>\n```", nil, ""},
		{"xml in inline code", "Write `<function_calls><invoke name=\"terminal\"><parameter name=\"command\">ls</parameter></invoke></function_calls>` to call.", nil, ""},
		{"xml followed by prose", "For example:\n<function_calls><invoke name=\"terminal\"><parameter name=\"command\">ls</parameter></invoke></function_calls>\nThat would list files.", nil, ""},
		{"xml unknown tool", "<function_calls><invoke name=\"launch\"><parameter name=\"x\">1</parameter></invoke></function_calls>", nil, ""},
		{"xml one unknown among known", "<function_calls><invoke name=\"terminal\"><parameter name=\"command\">ls</parameter></invoke><invoke name=\"launch\"></invoke></function_calls>", nil, ""},
		{"bare json with prose", `Call {"name": "terminal", "arguments": {"command": "date"}} to get the date.`, nil, ""},
		{"bare json in a fence", "```json\n{\"name\": \"terminal\", \"arguments\": {\"command\": \"date\"}}\n```", nil, ""},
		{"bare json unknown tool", `{"name": "launch", "arguments": {}}`, nil, ""},
		{"bare json without arguments is data", `{"name": "terminal"}`, nil, ""},
		{"bare json with other keys is data", `{"name": "terminal", "arguments": {}, "description": "runs commands"}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, remaining := Extract(tt.in, known)
			var got []string
			for _, c := range calls {
				var v any
				if err := json.Unmarshal([]byte(c.Arguments), &v); err != nil {
					t.Fatalf("arguments %q: %v", c.Arguments, err)
				}
				b, _ := json.Marshal(v)
				got = append(got, c.Name+" "+string(b))
				if !strings.HasPrefix(c.ID, "call_text_") {
					t.Errorf("id = %q", c.ID)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("calls = %q, want %q", got, tt.want)
			}
			wantRest := tt.remaining
			if tt.want == nil {
				wantRest = tt.in
			}
			if remaining != wantRest {
				t.Errorf("remaining = %q, want %q", remaining, wantRest)
			}
		})
	}
}
