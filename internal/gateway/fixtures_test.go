package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
)

// newRuntime starts a session runtime in a fresh HERMES_HOME against the
// fake model server srv.
func newRuntime(t *testing.T, srv *llmtest.Server, home string) *session.Runtime {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	return newRuntimeWith(t, srv, home, func(*session.Options) {})
}

// newRuntimeWith is a runtime on the fake model srv in home, with options
// changed by edit.
func newRuntimeWith(t *testing.T, srv *llmtest.Server, home string, edit func(*session.Options)) *session.Runtime {
	t.Helper()
	work := t.TempDir()
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  cwd: " + work + "\n" + "compression:\n  enabled: false\napprovals:\n  timeout: 2\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := session.Options{Config: loaded, Home: home, UserHome: t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Platform: "gateway",
		Warn: func(s string) { t.Log(s) }}
	edit(&o)
	rt, err := session.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// chatBody decodes a chat request's messages.
func chatBody(r llmtest.Request) []llmtest.ChatMessage {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	return body.Messages
}

// lastUser is the text of the last user message of a chat request.
func lastUser(r llmtest.Request) string {
	msgs := chatBody(r)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Text()
		}
	}
	return ""
}

// echo answers with "echo: " + the last user message and the number of
// user messages the model saw (so tests can tell a continued session).
func echo(r llmtest.Request) llmtest.Turn {
	n := 0
	for _, m := range chatBody(r) {
		if m.Role == "user" {
			n++
		}
	}
	return llmtest.Turn{Text: "echo: " + lastUser(r) + " #" + itoa(n), ChunkSize: 3}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
