package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// Images travel inside the tool_result block and as image blocks of a user
// prompt, base64 with their media type.
func TestImagePartsOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "ok"})
	req := llm.Request{Model: "claude-sonnet-4", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "look", Parts: []llm.Part{llm.ImagePart("image/jpeg", []byte("jpg"))}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "browser_vision", Arguments: `{}`}}},
		{Role: llm.RoleTool, ToolCallID: "t1", Content: "Screenshot attached.", Parts: []llm.Part{llm.ImagePart("image/png", []byte("png"))}},
	}}
	if _, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"}), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Source  map[string]string
				Content []struct {
					Type   string            `json:"type"`
					Source map[string]string `json:"source"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	user := body.Messages[0].Content
	if len(user) != 2 || user[0].Text != "look" || user[1].Type != "image" || user[1].Source["data"] != "anBn" ||
		user[1].Source["media_type"] != "image/jpeg" {
		t.Errorf("user blocks = %+v", user)
	}
	res := body.Messages[2].Content[0]
	if res.Type != "tool_result" || len(res.Content) != 2 || res.Content[1].Type != "image" ||
		res.Content[1].Source["data"] != "cG5n" || res.Content[1].Source["media_type"] != "image/png" {
		t.Errorf("tool_result = %+v", res)
	}
}
