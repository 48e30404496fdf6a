package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// Two runtimes (two replicas, each with its own HERMES_HOME) on one
// PostgreSQL schema: a conversation started on one continues on the
// other, which sends the model the whole history; nothing is written to
// either state.db.
func TestReplicasShareSessionsInPostgres(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		var body struct {
			Messages []llmtest.ChatMessage `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		users := 0
		for _, m := range body.Messages {
			if m.Role == "user" {
				users++
			}
		}
		return llmtest.Turn{Text: fmt.Sprintf("%d user messages; last: %s", users, lastUser(r))}
	})
	replica := func() (*Runtime, string) {
		var home string
		rt := newTestRuntime(t, srv, func(o *Options) {
			home = o.Home
			cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
				"compression:\n  enabled: false\n" + "database:\n  backend: postgres\n  schema: " + schema + "\n"
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string {
				return map[string]string{"HERMES_HOME": home, "HERMES_DATABASE_URL": url}[k]
			}})
			if err != nil {
				t.Fatal(err)
			}
			o.Config = l
		})
		return rt, home
	}
	one, homeOne := replica()
	two, homeTwo := replica()
	ask := func(rt *Runtime, o OpenOptions, text string) (string, string) {
		t.Helper()
		s, err := rt.Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		sub := s.Subscribe(SubscribeOptions{})
		defer sub.Close()
		turn, _, err := s.Send(context.Background(), text, SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, sub, turn.ID)
		return s.ID(), evs[len(evs)-1].Text
	}
	id, answer := ask(one, OpenOptions{Key: "api:a", Source: "api_server"}, "first question")
	if answer != "1 user messages; last: first question" {
		t.Fatalf("replica one answered %q", answer)
	}
	id2, answer := ask(two, OpenOptions{Resume: id, Source: "api_server"}, "second question")
	if id2 != id || answer != "2 user messages; last: second question" {
		t.Fatalf("replica two: session %s answered %q, want session %s with the history", id2, answer, id)
	}
	msgs, err := one.Store().Messages(context.Background(), id)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("replica one sees %d messages, %v; want 4", len(msgs), err)
	}
	// A chat's key resolves on either replica: the key index is in the database.
	chat := OpenOptions{Key: "agent:main:telegram:dm:42", Source: "telegram", Platform: "telegram"}
	kid, _ := ask(one, chat, "chat one")
	kid2, answer := ask(two, chat, "chat two")
	if kid2 != kid || answer != "2 user messages; last: chat two" {
		t.Fatalf("the chat's second message on replica two: session %s answered %q, want session %s with the history", kid2, answer, kid)
	}
	for _, h := range []string{homeOne, homeTwo} {
		for _, f := range []string{"state.db", "sessions/sessions.json"} {
			if _, err := os.Stat(filepath.Join(h, f)); err == nil {
				t.Errorf("%s/%s was written while the backend is postgres", h, f)
			}
		}
	}
}
