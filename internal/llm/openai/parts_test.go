package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// An image returned by a tool reaches a chat-completions model as an image
// part of a user message placed after the whole run of tool results (the
// wire accepts images only from the user), and a user prompt with an image
// is sent as content parts.
func TestImagePartsOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "a red square"})
	png := []byte("\x89PNG fake")
	req := llm.Request{Model: "gpt-4o", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "what is this?", Parts: []llm.Part{llm.ImagePart("image/jpeg", []byte("jpg"))}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "browser_vision"}, {ID: "c2", Name: "terminal"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "browser_vision", Content: "Screenshot attached.",
			Parts: []llm.Part{llm.ImagePart("image/png", png)}},
		{Role: llm.RoleTool, ToolCallID: "c2", ToolName: "terminal", Content: "ok"},
	}}
	if _, err := run(t, New(Config{Name: "openai", BaseURL: srv.URL}), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,tool,user" {
		t.Fatalf("roles = %v, want the image message after both tool results", roles)
	}
	first := string(body.Messages[0].Content)
	if !strings.Contains(first, `"text":"what is this?"`) || !strings.Contains(first, "data:image/jpeg;base64,anBn") {
		t.Errorf("user parts = %s", first)
	}
	if string(body.Messages[2].Content) != `"Screenshot attached."` {
		t.Errorf("tool content = %s", body.Messages[2].Content)
	}
	last := string(body.Messages[4].Content)
	if !strings.Contains(last, "c1") || !strings.Contains(last, "data:image/png;base64,iVBORyBmYWtl") {
		t.Errorf("image message = %s", last)
	}
}
