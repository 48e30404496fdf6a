package textcall

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func known(name string) bool {
	return name == "read_file" || name == "terminal" || name == "write_file"
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      []string // "name args" per call, args compacted
		remaining string
	}{
		{"standard", "I'll read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"runbook.md\"}}\n</tool_call>",
			[]string{`read_file {"path":"runbook.md"}`}, "I'll read it."},
		{"closing tag missing", `<tool_call>{"name": "terminal", "arguments": {"command": "ls -la"}}`,
			[]string{`terminal {"command":"ls -la"}`}, ""},
		{"single quoted python dict", `<tool_call>{'name': 'write_file', 'arguments': {'path': 'a.md', 'content': "it's \"ok\"", 'force': True, 'mode': None}}</tool_call>`,
			[]string{`write_file {"content":"it's \"ok\"","force":true,"mode":null,"path":"a.md"}`}, ""},
		{"args instead of arguments", `<tool_call>{"name": "read_file", "args": {"path": "x"}}</tool_call> done`,
			[]string{`read_file {"path":"x"}`}, "done"},
		{"arguments as JSON string", `<tool_call>{"name": "read_file", "arguments": "{\"path\": \"y\"}"}</tool_call>`,
			[]string{`read_file {"path":"y"}`}, ""},
		{"no arguments", `<tool_call>{"name": "terminal"}</tool_call>`, []string{`terminal {}`}, ""},
		{"two calls, second unclosed", "<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}</tool_call>\n<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"b\"}}",
			[]string{`read_file {"path":"a"}`, `read_file {"path":"b"}`}, ""},
		{"two unclosed in a row", "<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"a\"}}\n<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"b\"}}",
			[]string{`terminal {"command":"a"}`, `terminal {"command":"b"}`}, ""},
		{"call after inline code", "Run `ls` first.\n<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\"}}</tool_call>",
			[]string{`terminal {"command":"ls"}`}, "Run `ls` first."},
		{"backticks inside a real call body", "<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"echo `date`\"}}</tool_call> and `done`",
			[]string{"terminal {\"command\":\"echo `date`\"}"}, "and `done`"},
		{"unmatched backtick before a call", "It's the ` key.\n\n<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\"}}</tool_call>",
			[]string{`terminal {"command":"ls"}`}, "It's the ` key."},
		{"call after a code fence", "```\n<tool_call>{\"name\":\"terminal\"}</tool_call>\n```\n<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}</tool_call>",
			[]string{`read_file {"path":"a"}`}, "```\n<tool_call>{\"name\":\"terminal\"}</tool_call>\n```"},
		{"opening tag missing after a reasoning close", `I need the file list.</think>{"name": "terminal", "arguments": {"command": "ls"}}</tool_call>`,
			[]string{`terminal {"command":"ls"}`}, "I need the file list."},
		{"opening tag missing, whitespace around", "</think>\n\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n",
			[]string{`read_file {"path":"a"}`}, ""},
		{"opening tags missing, two calls", `</think>{"name":"terminal","arguments":{"command":"a"}}</tool_call>{"name":"terminal","arguments":{"command":"b"}}</tool_call>`,
			[]string{`terminal {"command":"a"}`, `terminal {"command":"b"}`}, ""},
		// Negatives: nothing is recovered and the text is untouched.
		{"close tag after prose", `Models end a call with {"name": "terminal", "arguments": {}} and then </tool_call>.`, nil, ""},
		{"close tag, unknown tool", `</think>{"name": "launch", "arguments": {}}</tool_call>`, nil, ""},
		{"prose mentioning JSON", `Send {"name": "read_file", "arguments": {"path": "x"}} to the API.`, nil, ""},
		{"code fence example without tag", "Example:\n```json\n{\"name\": \"terminal\", \"arguments\": {\"command\": \"rm -rf /\"}}\n```", nil, ""},
		{"tag inside code fence", "The format is:\n```\n<tool_call>{\"name\": \"terminal\", \"arguments\": {\"command\": \"ls\"}}</tool_call>\n```", nil, ""},
		{"tag inside inline code", "Example: `<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"echo D > tc_d\"}}</tool_call>` is how a call looks.", nil, ""},
		{"tag inside double-backtick inline code", "Write ``<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"echo `x`\"}}</tool_call>`` to run it.", nil, ""},
		{"inline code spanning lines", "See `\n<tool_call>{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\"}}</tool_call>\n` above.", nil, ""},
		{"unknown tool", `<tool_call>{"name": "launch_missiles", "arguments": {}}</tool_call>`, nil, ""},
		{"tag mentioned in prose", "Models emit a <tool_call> tag when they want a tool.", nil, ""},
		{"broken JSON", `<tool_call>{"name": "terminal", "arguments": {"command": </tool_call>`, nil, ""},
		{"empty", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, remaining := Extract(tt.in, known)
			var got []string
			for _, c := range calls {
				got = append(got, c.Name+" "+compact(t, c.Arguments))
				if !strings.HasPrefix(c.ID, "call_text_") {
					t.Errorf("id = %q", c.ID)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("calls = %q, want %q", got, tt.want)
			}
			wantRemaining := tt.remaining
			if tt.want == nil {
				wantRemaining = tt.in
			}
			if remaining != wantRemaining {
				t.Errorf("remaining = %q, want %q", remaining, wantRemaining)
			}
		})
	}
}

func TestIDsUnique(t *testing.T) {
	calls, _ := Extract(`<tool_call>{"name":"terminal"}</tool_call><tool_call>{"name":"terminal"}</tool_call>`, known)
	if len(calls) != 2 || calls[0].ID == calls[1].ID {
		t.Fatalf("calls = %+v", calls)
	}
}

func compact(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
