// Package llm defines hermes's provider-neutral model interface: the
// conversation shapes (Message, ToolCall, ToolSpec), one normalized stream of
// events that every wire format (OpenAI chat completions, Anthropic Messages,
// replay files) is translated into, and the errors a provider reports.
//
// The history shape follows the OpenAI chat-completions convention that
// Hermes Agent uses internally ("agent-loop.md": role/content/tool_calls, tool
// results as role "tool"); providers convert to and from their own wire.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Role is the author of a Message.
type Role string

// Roles of a conversation, as in OpenAI chat completions.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one tool invocation requested by the model.
// Arguments holds the JSON object text exactly as the model produced it; it
// may be empty or malformed, and the agent validates it before running a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one entry of the conversation history.
//
// Assistant messages carry Content, ToolCalls and the model's reasoning
// (Reasoning text, and for Anthropic the thinking block's Signature, for
// OpenRouter the opaque ReasoningDetails array) so that it can be sent back
// to providers that require it. Tool messages carry the result in Content,
// the call they answer in ToolCallID and ToolName, and IsError when the tool
// failed.
//
// Parts holds content beyond the text (images from a user prompt or a tool
// such as browser_vision). The text stays in Content, so callers that only
// know text keep working; providers send Content first, then Parts.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	Parts      []Part     `json:"parts,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolName   string     `json:"tool_name,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`

	Reasoning          string          `json:"reasoning,omitempty"`
	ReasoningSignature string          `json:"reasoning_signature,omitempty"`
	ReasoningDetails   json.RawMessage `json:"reasoning_details,omitempty"`
	// RedactedThinking holds Anthropic redacted_thinking data blocks, sent back verbatim.
	RedactedThinking []string `json:"redacted_thinking,omitempty"`

	FinishReason string `json:"finish_reason,omitempty"`

	// Model and Provider name who wrote an assistant message (the model
	// id and provider slug of the call that answered; a fallback provider
	// differs from the session's). They are not sent to providers.
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// PartType tells which fields of a Part are set.
type PartType string

// Part types.
const (
	// PartText: Text is set.
	PartText PartType = "text"
	// PartImage: MediaType (image/png, image/jpeg, image/gif, image/webp)
	// and Data (the encoded image bytes) are set.
	PartImage PartType = "image"
)

// Part is one piece of non-text (or extra text) message content, as in
// OpenAI's content parts and Anthropic's content blocks. Data is base64 in
// JSON.
type Part struct {
	Type      PartType `json:"type"`
	Text      string   `json:"text,omitempty"`
	MediaType string   `json:"media_type,omitempty"`
	Data      []byte   `json:"data,omitempty"`
}

// ImagePart returns an image Part holding data of the given media type.
func ImagePart(mediaType string, data []byte) Part {
	return Part{Type: PartImage, MediaType: mediaType, Data: data}
}

// HasImages reports whether m carries at least one image part.
func (m Message) HasImages() bool {
	for _, p := range m.Parts {
		if p.Type == PartImage {
			return true
		}
	}
	return false
}

// ToolSpec describes a tool to the model. Parameters is a JSON Schema object
// (type "object" with properties), as accepted by both OpenAI function
// calling and Anthropic tool use.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call.
type Request struct {
	Model           string
	System          string // system prompt; byte-stable within a session
	Messages        []Message
	Tools           []ToolSpec
	MaxTokens       int    // 0 means the provider default
	ReasoningEffort string // "", none, minimal, low, medium, high, xhigh
}

// EventType tells which fields of an Event are set.
type EventType int

// Event types of a model stream.
const (
	// EventTextDelta: Text holds the next piece of the answer.
	EventTextDelta EventType = iota + 1
	// EventReasoningDelta: Text holds the next piece of reasoning.
	EventReasoningDelta
	// EventReasoningSignature: Text holds an Anthropic thinking signature.
	EventReasoningSignature
	// EventToolCallStart: Index, ToolCall.ID and ToolCall.Name are set.
	EventToolCallStart
	// EventToolCallDelta: Index and Text (the next piece of the arguments).
	EventToolCallDelta
	// EventToolCallEnd: Index; ToolCall holds the complete call.
	EventToolCallEnd
	// EventUsage: Usage holds token counts (cumulative for the call).
	EventUsage
	// EventFinish: FinishReason is set (stop, tool_calls, length, content_filter...).
	EventFinish
	// EventRedactedThinking: Text holds the data of an Anthropic
	// redacted_thinking block, to be sent back verbatim.
	EventRedactedThinking
)

// Event is one normalized piece of a model stream.
type Event struct {
	Type         EventType
	Text         string
	Index        int
	ToolCall     ToolCall
	Usage        Usage
	FinishReason string
	// Raw optionally carries provider data that must be replayed verbatim
	// (e.g. OpenRouter reasoning_details) for the message being built.
	Raw json.RawMessage
}

// Usage counts tokens of one or more model calls.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Stream is an open model response. Next advances to the next event and
// returns false at the end or on error; Err reports the error (nil at a clean
// end). Close releases the connection and is safe to call more than once.
type Stream interface {
	Next() bool
	Event() Event
	Err() error
	Close() error
}

// Provider is a model endpoint speaking one wire format.
type Provider interface {
	// Name is the provider slug (openrouter, openai, anthropic, custom, replay).
	Name() string
	// Stream starts one model call. Errors returned here or from the Stream
	// are *APIError when the endpoint answered with an error.
	Stream(ctx context.Context, req Request) (Stream, error)
}

// APIError is an error answered by a provider, either as an HTTP status or
// as an error object inside a 200 stream (StatusCode 0 then).
type APIError struct {
	Provider   string
	StatusCode int
	Message    string
	// Fix tells a person what to change (the env var or config key), when known.
	Fix string
	// Retryable is true for 429, 5xx, overloaded errors, resets and timeouts.
	Retryable bool
	// RetryAfter is the delay the provider asked for (Retry-After), or zero.
	RetryAfter time.Duration
	// ContextOverflow is true when the provider said the prompt is too long.
	ContextOverflow bool
	// Refused is true when nothing listened at the provider's address
	// (ECONNREFUSED): retried like other connection failures, unless the
	// RetryPolicy says a fallback provider should take over at once.
	Refused bool
}

func (e *APIError) Error() string {
	msg := e.Provider
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" returned HTTP %d", e.StatusCode)
	} else {
		msg += " stream error"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}
