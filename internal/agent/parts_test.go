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

// A screenshot from an earlier turn is not sent again: the request of the
// next turn carries a note instead, and the stored history is unchanged.
func TestEarlierTurnImagesLeaveTheRequest(t *testing.T) {
	shot := &funcTool{name: "browser_vision", run: func(ctx context.Context, call tool.Call) tool.Result {
		return tool.Result{Content: "Screenshot attached.", Parts: []llm.Part{llm.ImagePart("image/png", []byte("png-bytes"))}}
	}}
	srv, prov := newFakeModel(t, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "browser_vision", Args: `{}`}}}, llmtest.Turn{Text: "red"},
		llmtest.Turn{Text: "bye"})
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(shot)})
	s := &Session{ID: "s"}
	for _, p := range []string{"what colour?", "thanks"} {
		if _, err := a.RunTurn(context.Background(), s, p); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[1].Body), "data:image/png") {
		t.Error("the image was not sent in its own turn")
	}
	if body := string(reqs[2].Body); strings.Contains(body, "data:image/png") || !strings.Contains(body, "no longer attached") {
		t.Errorf("next turn's request still carries the image or lacks the note:\n%s", body)
	}
	var kept bool
	for _, m := range s.History {
		kept = kept || m.HasImages()
	}
	if !kept {
		t.Error("the stored history lost the image")
	}
}
