package textcall

import (
	"encoding/json"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"html"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

// The Anthropic XML tool-use form that Ollama-served DeepSeek, GLM and Kimi
// models write as text:
//
//	<function_calls>
//	<invoke name="terminal">
//	<parameter name="command">ls -la</parameter>
//	</invoke>
//	</function_calls>
const (
	xmlOpen  = "<function_calls>"
	xmlClose = "</function_calls>"
)

var (
	invokeRE    = lazyregexp.New(`(?s)<invoke\s+name\s*=\s*"([^"]*)"\s*>(.*?)</invoke>`)
	parameterRE = lazyregexp.New(`(?s)<parameter\s+name\s*=\s*"([^"]*)"\s*>(.*?)</parameter>`)
)

// extractXML recovers the calls of one <function_calls> block. The block
// must be outside Markdown code and nothing but whitespace may follow it
// (a model making a call stops there to wait for the result; text after
// the block means the block was an example being discussed). The closing
// </function_calls> may be missing (it is a common stop sequence). Prose
// before the block is kept as the remaining content. Every <invoke> must
// name a known tool, or nothing is recovered.
func extractXML(content string, known func(string) bool) ([]llm.ToolCall, string) {
	start := outsideCode(content, xmlOpen)
	if start < 0 {
		return nil, content
	}
	body := content[start+len(xmlOpen):]
	if end := strings.Index(body, xmlClose); end >= 0 {
		if strings.TrimSpace(body[end+len(xmlClose):]) != "" {
			return nil, content
		}
		body = body[:end]
	}
	invokes := invokeRE().FindAllStringSubmatchIndex(body, -1)
	if len(invokes) == 0 {
		return nil, content
	}
	last := invokes[len(invokes)-1][1]
	if strings.TrimSpace(invokeRE().ReplaceAllString(body[:last], "")) != "" || strings.TrimSpace(body[last:]) != "" {
		return nil, content // stray text between or after the invokes
	}
	var calls []llm.ToolCall
	for _, m := range invokes {
		name := strings.TrimSpace(body[m[2]:m[3]])
		if known == nil || !known(name) {
			return nil, content
		}
		args := map[string]json.RawMessage{}
		for _, p := range parameterRE().FindAllStringSubmatch(body[m[4]:m[5]], -1) {
			args[strings.TrimSpace(p[1])] = parameterValue(p[2])
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, content
		}
		calls = append(calls, llm.ToolCall{ID: newID(), Name: name, Arguments: string(b)})
	}
	return calls, strings.TrimSpace(content[:start])
}

// parameterValue turns a <parameter> body into a JSON value: a JSON object
// or array stays structured, anything else is a string (one leading and
// trailing newline dropped, XML entities decoded). The agent converts
// strings to numbers or booleans where the tool's schema wants them.
func parameterValue(v string) json.RawMessage {
	v = strings.TrimPrefix(v, "\n")
	v = strings.TrimSuffix(v, "\n")
	if t := strings.TrimSpace(v); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	if strings.Contains(v, "&") {
		v = html.UnescapeString(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// outsideCode returns the index of the first tag in s that is not inside
// Markdown code (a ``` fence or an inline code span), or -1.
func outsideCode(s, tag string) int {
	pos := 0
	for {
		i := strings.Index(s[pos:], tag)
		if i < 0 {
			return -1
		}
		start := pos + i
		if b := strings.IndexByte(s[pos:start], '`'); b >= 0 {
			pos = codeEnd(s, pos+b)
			continue
		}
		return start
	}
}

// extractBare recovers a message whose whole content is one JSON object
// naming a known tool: {"name": "terminal", "arguments": {...}} (also
// "parameters", "args" or "input" for the arguments, and the OpenAI shape
// {"type": "function", "function": {"name": …, "arguments": …}}). Keys other
// than those, prose around the object or a code fence mean it is not a call.
func extractBare(content string, known func(string) bool) []llm.ToolCall {
	t := strings.TrimSpace(content)
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") || !json.Valid([]byte(t)) {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &obj) != nil {
		return nil
	}
	if fn, ok := obj["function"]; ok && len(obj) <= 3 {
		var typ string
		_ = json.Unmarshal(obj["type"], &typ)
		if typ != "" && typ != "function" {
			return nil
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(fn, &inner) != nil {
			return nil
		}
		obj = inner
	}
	allowed := map[string]bool{"name": true, "arguments": true, "parameters": true, "args": true, "input": true, "id": true, "type": true}
	hasArgs := false
	for k := range obj {
		if !allowed[k] {
			return nil
		}
		hasArgs = hasArgs || (k != "name" && k != "id" && k != "type")
	}
	if !hasArgs {
		return nil
	}
	call, ok := parseCall(string(mustMarshal(obj)))
	if !ok || known == nil || !known(call.Name) {
		return nil
	}
	call.ID = newID()
	return []llm.ToolCall{call}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
