package gateway

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
)

// layeredBackend is the local backend plus the box backend's per-session
// state: Open creates it, Remove deletes it (as box.Manager.Remove does).
type layeredBackend struct {
	*local.Backend
	mu     sync.Mutex
	layers []string
}

func (b *layeredBackend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	b.mu.Lock()
	if !slices.Contains(b.layers, taskID) {
		b.layers = append(b.layers, taskID)
	}
	b.mu.Unlock()
	return b.Backend.Open(ctx, taskID)
}

func (b *layeredBackend) Remove(taskID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.layers = slices.DeleteFunc(b.layers, func(s string) bool { return s == taskID })
	return nil
}

func (b *layeredBackend) left() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.layers)
}

// A chat-completions request without X-Hermes-Session-Id leaves no box
// layer behind (each left 1.4 MiB: issue 24); a session continued by its
// id keeps its box.
func TestAPIServerRequestsWithoutSessionLeaveNoBox(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		msgs := chatBody(r)
		if msgs[len(msgs)-1].Role == "tool" {
			return llmtest.Turn{Text: "ran it"}
		}
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"echo hi"}`}}}
	})
	home, work := t.TempDir(), t.TempDir()
	cfgText := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\nterminal:\n  cwd: " + work +
		"\ncompression:\n  enabled: false\napprovals:\n  mode: off\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	be := &layeredBackend{}
	rt, err := session.New(context.Background(), session.Options{Config: loaded, Home: home, UserHome: t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Platform: "gateway", Warn: func(s string) { t.Log(s) },
		NewBackend: func(_ *config.Config, cwd string) (backend.Backend, error) {
			l, err := local.New(cwd, nil, func() []string { return []string{"PATH=/usr/bin:/bin"} })
			be.Backend = l
			return be, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	api, err := NewAPIServer(rt, APIServerConfig{Key: testKey, Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	c := client(api)
	ctx := context.Background()
	var hdr *http.Response
	for range 3 {
		res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "hermes-agent",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("run echo")}}, option.WithResponseInto(&hdr))
		if err != nil || res.Choices[0].Message.Content != "ran it" {
			t.Fatalf("%v %v", res, err)
		}
	}
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "hermes-agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("run echo")}})
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if left := be.left(); len(left) != 0 {
		t.Fatalf("requests without a session header left boxes %v", left)
	}
	// A session continued by its id keeps its box.
	sid := hdr.Header.Get(SessionHeader)
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "hermes-agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("run echo")}}, option.WithHeader(SessionHeader, sid)); err != nil {
		t.Fatal(err)
	}
	if left := be.left(); !slices.Equal(left, []string{sid}) {
		t.Fatalf("boxes after a continued session: %v, want [%s]", left, sid)
	}
}
