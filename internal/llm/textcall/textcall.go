// Package textcall recovers tool calls that a model wrote as text instead of
// using the API's tool-calling field, in the Hermes function-calling format
// (NousResearch Hermes-Function-Calling, as parsed by Hermes Agent's
// hermes_parser):
//
//	<tool_call>
//	{"name": "read_file", "arguments": {"path": "runbook.md"}}
//	</tool_call>
//
// Tolerated variants: the closing tag missing (the call runs to the next
// <tool_call> or the end of the text), single-quoted python-dict style
// JSON (with True/False/None), "args" or "parameters" instead of
// "arguments", and arguments given as a JSON string. Only calls naming a
// known tool are recovered; JSON in prose, or a tag inside a ``` code fence
// or an inline `code` span (an example), is left as text.
package textcall

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

const (
	openTag  = "<tool_call>"
	closeTag = "</tool_call>"
)

// Extract returns the tool calls found in content, in order, each with a
// fresh id "call_text_<16 hex>", and content with those calls removed
// (trimmed). Segments that do not parse or name an unknown tool stay in
// remaining, and so do tags inside Markdown code: a ``` fence or an inline
// code span (CommonMark: a run of one or two backticks closed by a run of
// the same length, not across a blank line). Backticks inside a recovered
// call's body do not open code. known reports whether a tool name is
// registered.
//
// Three more forms are recovered when the Hermes form is absent: calls
// whose opening tag is missing, after a reasoning close (see
// extractOrphanClose), an
// Anthropic-XML <function_calls> block at the end of the message (see
// extractXML) and a message that is nothing but one JSON call object (see
// extractBare).
func Extract(content string, known func(string) bool) (calls []llm.ToolCall, remaining string) {
	if !strings.Contains(content, openTag) {
		if strings.Contains(content, closeTag) {
			return extractOrphanClose(content, known)
		}
		if strings.Contains(content, xmlOpen) {
			return extractXML(content, known)
		}
		if calls := extractBare(content, known); len(calls) > 0 {
			return calls, ""
		}
		return nil, content
	}
	var out strings.Builder
	copied := 0 // content[:copied] is already in out (or dropped as a call)
	pos := 0
	for {
		i := strings.Index(content[pos:], openTag)
		if i < 0 {
			break
		}
		start := pos + i
		if b := strings.IndexByte(content[pos:start], '`'); b >= 0 {
			pos = codeEnd(content, pos+b)
			continue
		}
		bodyStart := start + len(openTag)
		end, next := segmentEnd(content, bodyStart)
		pos = next
		call, ok := parseCall(content[bodyStart:end])
		if !ok || known == nil || !known(call.Name) {
			continue
		}
		call.ID = newID()
		calls = append(calls, call)
		out.WriteString(content[copied:start])
		copied = next
	}
	out.WriteString(content[copied:])
	if len(calls) == 0 {
		return nil, content
	}
	return calls, strings.TrimSpace(out.String())
}

// codeEnd returns the index just past the Markdown code that the backtick
// run at i opens: a run of three or more opens a fence that ends after the
// next ``` (or at the end of s); a run of one or two opens an inline code
// span that ends after the next run of exactly the same length, unless a
// blank line comes first, in which case the run is literal text and the
// index just past it is returned.
func codeEnd(s string, i int) int {
	n := backtickRun(s, i)
	if n >= 3 {
		c := strings.Index(s[i+n:], "```")
		if c < 0 {
			return len(s)
		}
		return i + n + c + 3
	}
	limit := len(s)
	if blank := strings.Index(s[i+n:], "\n\n"); blank >= 0 {
		limit = i + n + blank
	}
	for j := i + n; j < limit; {
		b := strings.IndexByte(s[j:limit], '`')
		if b < 0 {
			break
		}
		j += b
		m := backtickRun(s, j)
		if m == n {
			return j + m
		}
		j += m
	}
	return i + n
}

// backtickRun returns how many consecutive backticks start at s[i].
func backtickRun(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// segmentEnd finds where a call body that starts at from ends: at the
// closing tag (next is after it), else at the next opening tag or the end.
func segmentEnd(s string, from int) (end, next int) {
	c := strings.Index(s[from:], closeTag)
	o := strings.Index(s[from:], openTag)
	if c >= 0 && (o < 0 || c < o) {
		return from + c, from + c + len(closeTag)
	}
	if o >= 0 {
		return from + o, from + o
	}
	return len(s), len(s)
}

// parseCall decodes one call body; ok is false when it is not a call.
func parseCall(body string) (llm.ToolCall, bool) {
	obj, ok := decodeObject(body)
	if !ok {
		return llm.ToolCall{}, false
	}
	var name string
	if json.Unmarshal(obj["name"], &name) != nil || strings.TrimSpace(name) == "" {
		return llm.ToolCall{}, false
	}
	var args json.RawMessage
	for _, k := range []string{"arguments", "args", "parameters", "input"} {
		if v, ok := obj[k]; ok {
			args = v
			break
		}
	}
	return llm.ToolCall{Name: strings.TrimSpace(name), Arguments: argumentsText(args)}, true
}

// argumentsText renders the arguments value as JSON object text: an object
// as is, a string holding JSON as that JSON, absent or null as {}; any
// other string is returned verbatim so the agent can report it as invalid.
func argumentsText(v json.RawMessage) string {
	t := strings.TrimSpace(string(v))
	if t == "" || t == "null" {
		return "{}"
	}
	if strings.HasPrefix(t, "\"") {
		var s string
		if json.Unmarshal(v, &s) == nil {
			s = strings.TrimSpace(s)
			if s == "" {
				return "{}"
			}
			if obj, ok := decodeObject(s); ok {
				b, _ := json.Marshal(obj)
				return string(b)
			}
			return s
		}
	}
	return t
}

// decodeObject reads the first JSON object in s, accepting python-dict
// syntax; trailing text after the object is ignored.
func decodeObject(s string) (map[string]json.RawMessage, bool) {
	i := strings.Index(s, "{")
	if i < 0 {
		return nil, false
	}
	s = s[i:]
	for _, candidate := range []string{s, pythonToJSON(s)} {
		dec := json.NewDecoder(strings.NewReader(candidate))
		var obj map[string]json.RawMessage
		if dec.Decode(&obj) == nil && obj != nil {
			return obj, true
		}
	}
	return nil, false
}

// pythonToJSON converts python-dict literal syntax to JSON: single-quoted
// strings become double-quoted, True/False/None become true/false/null.
func pythonToJSON(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(s)-1)
			b.WriteString(s[i : j+1])
			i = j
		case c == '\'':
			b.WriteByte('"')
			j := i + 1
			for ; j < len(s) && s[j] != '\''; j++ {
				switch {
				case s[j] == '\\' && j+1 < len(s) && s[j+1] == '\'':
					b.WriteByte('\'')
					j++
				case s[j] == '\\' && j+1 < len(s):
					b.WriteByte('\\')
					b.WriteByte(s[j+1])
					j++
				case s[j] == '"':
					b.WriteString(`\"`)
				default:
					b.WriteByte(s[j])
				}
			}
			b.WriteByte('"')
			i = j
		default:
			replaced := false
			for py, js := range map[string]string{"True": "true", "False": "false", "None": "null"} {
				if strings.HasPrefix(s[i:], py) && (i == 0 || !isIdent(s[i-1])) && (i+len(py) >= len(s) || !isIdent(s[i+len(py)])) {
					b.WriteString(js)
					i += len(py) - 1
					replaced = true
					break
				}
			}
			if !replaced {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_text_" + hex.EncodeToString(b[:])
}
