package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/tool"
)

// An image a tool returns (browser_vision's screenshot) goes back to the
// model with the tool's answer and stays in the history of the turn.
func TestToolImagePartReachesTheModel(t *testing.T) {
	shot := &funcTool{name: "browser_vision", run: func(ctx context.Context, call tool.Call) tool.Result {
		return tool.Result{Content: "Screenshot attached.", Parts: []llm.Part{llm.ImagePart("image/png", []byte("png-bytes"))}}
	}}
	srv, prov := newFakeModel(t, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "browser_vision", Args: `{}`}}}, llmtest.Turn{Text: "red"})
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(shot)})
	s := &Session{ID: "s"}
	if res, err := a.RunTurn(context.Background(), s, "what colour?"); err != nil || res.Text != "red" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	reqs := requests(t, srv)
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" {
		t.Fatalf("last message = %+v, want the user message carrying the image", last)
	}
	parts, _ := last.Content.([]any)
	var sawImage bool
	for _, p := range parts {
		if m, _ := p.(map[string]any); m["type"] == "image_url" {
			u, _ := m["image_url"].(map[string]any)["url"].(string)
			sawImage = strings.HasPrefix(u, "data:image/png;base64,cG5nLWJ5dGVz")
		}
	}
	if !sawImage {
		t.Errorf("no image part in %+v", last.Content)
	}
}
