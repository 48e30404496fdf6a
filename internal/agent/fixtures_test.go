package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/llm/openai"
	"github.com/hermes-go/hermes/internal/tool"
)

// The agent tests run the real OpenAI-wire provider against the llmtest
// fake model server: the only fake is at the network edge.

// newFakeModel starts a scripted model server and returns it with a
// provider talking to it (no retries: each scripted turn is one request).
func newFakeModel(t *testing.T, turns ...llmtest.Turn) (*llmtest.Server, llm.Provider) {
	t.Helper()
	srv := llmtest.NewServer(t, turns...)
	return srv, openai.New(openai.Config{Name: "custom", BaseURL: srv.URL})
}

// wireMessage is one chat-completions message as the fake server received it.
type wireMessage = llmtest.ChatMessage

// wireRequest is the decoded body of one chat-completions request.
type wireRequest struct {
	Messages []wireMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

func decodeRequest(t *testing.T, r llmtest.Request) wireRequest {
	t.Helper()
	var w wireRequest
	if err := json.Unmarshal(r.Body, &w); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return w
}

// requests decodes every request the server received.
func requests(t *testing.T, srv *llmtest.Server) []wireRequest {
	t.Helper()
	var out []wireRequest
	for _, r := range srv.Requests() {
		out = append(out, decodeRequest(t, r))
	}
	return out
}

// funcTool is an in-process tool whose behaviour the test supplies.
type funcTool struct {
	name     string
	parallel bool
	run      func(ctx context.Context, call tool.Call) tool.Result
}

func (f *funcTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: f.name, Description: "test tool " + f.name,
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
}
func (f *funcTool) Toolset() string { return "test" }
func (f *funcTool) Parallel() bool  { return f.parallel }
func (f *funcTool) Run(ctx context.Context, call tool.Call) tool.Result {
	return f.run(ctx, call)
}

// eventLog collects agent events safely from concurrent tool goroutines.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) notices() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events {
		if ev.Kind == EventNotice {
			out = append(out, ev.Text)
		}
	}
	return out
}

// jsonString encodes v as JSON text for scripted tool-call arguments.
func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
