package textcall

import (
	"encoding/json"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

// reasoningCloseTags end a reasoning block that a model wrote into its
// answer text (DeepSeek-R1, Qwen3 and GLM chat templates put the opening
// <think> in the prompt, so only the closing tag reaches the answer).
var reasoningCloseTags = []string{"</think>", "</thinking>", "</reasoning>"}

// extractOrphanClose recovers calls whose opening <tool_call> tag is
// missing: the template put it in the prompt, or the model dropped it
// right after closing its reasoning, as in
//
//	I need the file list.</think>{"name": "terminal", "arguments": {"command": "ls"}}</tool_call>
//
// Each </tool_call> ends a call whose JSON object is the last text before
// it: the object must start right after a reasoning close tag, the
// previous </tool_call> or the start of the content (whitespace aside)
// and end right before the tag. Reasoning close tags are removed from the
// remaining text; the reasoning before them stays. Anything else is left
// as text.
func extractOrphanClose(content string, known func(string) bool) (calls []llm.ToolCall, remaining string) {
	var out strings.Builder
	pos := 0
	for {
		i := strings.Index(content[pos:], closeTag)
		if i < 0 {
			break
		}
		segment := content[pos : pos+i]
		prose, body := splitAfterReasoning(segment)
		call, ok := parseCall(body)
		if !ok || !strings.HasPrefix(strings.TrimSpace(body), "{") || !endsWithObject(body) || known == nil || !known(call.Name) {
			return nil, content
		}
		call.ID = newID()
		calls = append(calls, call)
		out.WriteString(prose)
		pos += i + len(closeTag)
	}
	if len(calls) == 0 {
		return nil, content
	}
	out.WriteString(content[pos:])
	return calls, strings.TrimSpace(out.String())
}

// splitAfterReasoning splits segment at its last reasoning close tag: the
// text before the tag (tag removed, trimmed, followed by a newline when
// not empty) and the text after it.
func splitAfterReasoning(segment string) (prose, body string) {
	cut, tagLen := -1, 0
	for _, tag := range reasoningCloseTags {
		if j := strings.LastIndex(segment, tag); j > cut {
			cut, tagLen = j, len(tag)
		}
	}
	if cut < 0 {
		return "", segment
	}
	prose = strings.TrimSpace(segment[:cut])
	if prose != "" {
		prose += "\n"
	}
	return prose, segment[cut+tagLen:]
}

// endsWithObject reports whether body, trimmed, is exactly one JSON (or
// python-dict) object.
func endsWithObject(body string) bool {
	t := strings.TrimSpace(body)
	for _, candidate := range []string{t, pythonToJSON(t)} {
		dec := json.NewDecoder(strings.NewReader(candidate))
		var v map[string]json.RawMessage
		if dec.Decode(&v) == nil && v != nil && strings.TrimSpace(candidate[dec.InputOffset():]) == "" {
			return true
		}
	}
	return false
}
