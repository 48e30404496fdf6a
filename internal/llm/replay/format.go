// Package replay records a run's model traffic to a JSON Lines file
// (--record FILE) and plays such a file back as the "replay" provider
// (--provider replay --replay FILE), so a run can be repeated offline with
// real tools. The same format serves as a hand-written "scripted model".
//
// # File format
//
// One JSON object per line, one line per model call, in call order; blank
// lines and lines starting with # are ignored. The Nth model call of a
// replayed run gets the Nth line. Every field is optional:
//
//	{"text": "final answer"}
//	{"reasoning": "why", "text": "I'll read the runbook.",
//	 "tool_calls": [{"name": "read_file", "arguments": {"path": "runbook.md"}}]}
//	{"usage": {"input_tokens": 120, "output_tokens": 30}, "text": "done"}
//	{"error": {"status": 429, "message": "rate limited", "retryable": true}}
//
// Fields: text (answer), reasoning, reasoning_signature (Anthropic),
// reasoning_details (OpenRouter, any JSON), tool_calls (id optional,
// generated as call_replay_<line>_<i>; arguments a JSON object, or a string
// sent verbatim even if malformed), usage (input_tokens, output_tokens,
// cache_read_tokens, cache_write_tokens, reasoning_tokens), finish_reason
// (default tool_calls when there are tool calls, else stop), error (the call
// fails with that APIError: status, message, retryable, context_overflow).
// Recorded files also carry "request": a summary of what was asked
// (model, message count, the last user or tool message, at most 2000
// bytes); it is informational and ignored on replay. Recordings never
// contain API keys or headers.
package replay

import (
	"encoding/json"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

// Entry is one line of a recording: one model call and its response.
type Entry struct {
	Request            *RequestSummary `json:"request,omitempty"`
	Reasoning          string          `json:"reasoning,omitempty"`
	ReasoningSignature string          `json:"reasoning_signature,omitempty"`
	ReasoningDetails   json.RawMessage `json:"reasoning_details,omitempty"`
	Text               string          `json:"text,omitempty"`
	ToolCalls          []ToolCall      `json:"tool_calls,omitempty"`
	Usage              *llm.Usage      `json:"usage,omitempty"`
	FinishReason       string          `json:"finish_reason,omitempty"`
	Error              *Error          `json:"error,omitempty"`
}

// RequestSummary describes the request of a recorded call.
type RequestSummary struct {
	Model    string `json:"model"`
	Messages int    `json:"messages"`
	Tools    int    `json:"tools"`
	// Last is the last user or tool message, "role: content", cut at 2000 bytes.
	Last string `json:"last,omitempty"`
}

// ToolCall is a recorded tool call. Arguments is a JSON object, or a JSON
// string holding the raw (possibly malformed) arguments text.
type ToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Error is a recorded provider error.
type Error struct {
	Status          int    `json:"status,omitempty"`
	Message         string `json:"message"`
	Retryable       bool   `json:"retryable,omitempty"`
	ContextOverflow bool   `json:"context_overflow,omitempty"`
}

// argumentsText turns recorded arguments into the text the model produced.
func argumentsText(raw json.RawMessage) string {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return "{}"
	}
	if strings.HasPrefix(t, `"`) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return t
}

// recordArguments stores arguments as an object when they are one, else as a string.
func recordArguments(args string) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

func summarize(req llm.Request) *RequestSummary {
	s := &RequestSummary{Model: req.Model, Messages: len(req.Messages), Tools: len(req.Tools)}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == llm.RoleUser || m.Role == llm.RoleTool {
			last := string(m.Role) + ": " + m.Content
			if len(last) > 2000 {
				last = last[:2000] + "…"
			}
			s.Last = last
			break
		}
	}
	return s
}
