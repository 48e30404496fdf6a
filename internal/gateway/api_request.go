package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

// chatRequest is the part of an OpenAI chat-completions request the API
// server reads (https://platform.openai.com/docs/api-reference/chat).
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// conversation is a parsed request: the system text, earlier turns and
// the new user message.
type conversation struct {
	System  string
	History []llm.Message
	Text    string
}

// maxMessages bounds the messages of one request.
const maxMessages = 1000

// parseChatRequest decodes and checks a chat-completions body. Errors are
// sentences for the API client.
func parseChatRequest(body []byte) (chatRequest, conversation, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, conversation{}, fmt.Errorf("the request body is not a JSON chat-completions request: %v", err)
	}
	if len(req.Messages) == 0 {
		return req, conversation{}, errors.New("messages is required and must not be empty")
	}
	if len(req.Messages) > maxMessages {
		return req, conversation{}, fmt.Errorf("at most %d messages per request", maxMessages)
	}
	var conv conversation
	var system []string
	for i, m := range req.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return req, conversation{}, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			conv.History = append(conv.History, llm.Message{Role: llm.RoleUser, Content: text})
		case "assistant":
			conv.History = append(conv.History, llm.Message{Role: llm.RoleAssistant, Content: text})
		case "tool":
			// The agent's tools run server-side; a client's tool results are not replayed.
		default:
			return req, conversation{}, fmt.Errorf("messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
	}
	n := len(conv.History)
	if n == 0 || conv.History[n-1].Role != llm.RoleUser || strings.TrimSpace(conv.History[n-1].Content) == "" {
		return req, conversation{}, errors.New("the last message must be a non-empty user message")
	}
	conv.Text = conv.History[n-1].Content
	conv.History = conv.History[:n-1]
	conv.System = strings.Join(system, "\n\n")
	return req, conv, nil
}

// contentText reads a message content: a string, or an array of parts of
// which the text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		default:
			return "", fmt.Errorf("content part type %q is not supported (text only)", p.Type)
		}
	}
	return b.String(), nil
}

// responsesRequest is the part of an OpenAI Responses request the API
// server reads (https://platform.openai.com/docs/api-reference/responses).
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Stream             bool            `json:"stream"`
}

// parseResponsesRequest decodes a Responses body into a conversation.
func parseResponsesRequest(body []byte) (responsesRequest, conversation, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, conversation{}, fmt.Errorf("the request body is not a JSON responses request: %v", err)
	}
	var s string
	if err := json.Unmarshal(req.Input, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return req, conversation{}, errors.New("input must not be empty")
		}
		return req, conversation{System: req.Instructions, Text: s}, nil
	}
	var items []chatMessage
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return req, conversation{}, errors.New("input must be a string or an array of messages")
	}
	wrapped, _ := json.Marshal(chatRequest{Messages: items})
	_, conv, err := parseChatRequest(wrapped)
	if err != nil {
		return req, conversation{}, err
	}
	conv.System = strings.TrimSpace(req.Instructions + "\n\n" + conv.System)
	return req, conv, nil
}
