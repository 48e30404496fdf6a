package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// newTestRuntime starts a runtime in a fresh HERMES_HOME against the fake
// model server srv (the only fake: the network edge).
func newTestRuntime(t *testing.T, srv *llmtest.Server, tune func(*Options)) *Runtime {
	t.Helper()
	home := t.TempDir()
	work := t.TempDir()
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  cwd: " + work + "\n" + "compression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string {
		if k == "HERMES_HOME" {
			return home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: loaded, Home: home, UserHome: t.TempDir(), Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} },
		Warn: func(s string) { t.Log(s) }}
	if tune != nil {
		tune(&o)
	}
	rt, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// lastUser is the text of the last user message of a chat request.
func lastUser(r llmtest.Request) string {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	for i := len(body.Messages) - 1; i >= 0; i-- {
		if body.Messages[i].Role == "user" {
			// An unanswered prompt is sent merged with the next one
			// ("slow one\n\nnow this"): the newest prompt is the last part.
			parts := strings.Split(body.Messages[i].Text(), "\n\n")
			return parts[len(parts)-1]
		}
	}
	return ""
}

// echo answers every request with "echo: " + the last user message.
func echo(r llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "echo: " + lastUser(r)} }

// collect reads events until the end of turnID (Final or Error).
func collect(t *testing.T, sub *Subscription, turnID string) []Event {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	var out []Event
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the end of %s: %v (got %v)", turnID, err, kinds(out))
		}
		out = append(out, ev)
		if ev.TurnID == turnID && (ev.Kind == Final || ev.Kind == Error) {
			return out
		}
	}
}

func kinds(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Kind.String() + " ")
	}
	return b.String()
}
