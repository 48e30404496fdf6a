package llmtest

import "strings"

// ChatMessage is one message of an OpenAI chat-completions request body as
// the server received it, for tests that assert what hermes sent.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"` // a string or a list of content parts
	ToolCallID string         `json:"tool_call_id"`
	ToolCalls  []ChatToolCall `json:"tool_calls"`
}

// ChatToolCall is one tool call of an assistant ChatMessage.
type ChatToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Text returns the message content as plain text, whether it was sent as a
// string or as content parts.
func (m ChatMessage) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				if s, ok := part["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}
