package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// TestAPIServerReplicasResolveEachOthersResponses runs two API servers,
// each with its own HERMES_HOME and runtime, on one PostgreSQL database
// (database.backend: postgres): a previous_response_id chain alternates
// between them and every link continues the one conversation; a response
// deleted on one is gone on the other.
func TestAPIServerReplicasResolveEachOthersResponses(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	dbYAML := fmt.Sprintf("database:\n  backend: postgres\n  url: %q\n  schema: %s\n", url, schema)
	var apis [2]*APIServer
	for i := range apis {
		rt := newRuntimeWith(t, srv, t.TempDir(), func(o *session.Options) {
			path := filepath.Join(o.Home, "config.yaml")
			b, err := os.ReadFile(path)
			if err == nil {
				err = os.WriteFile(path, append(b, dbYAML...), 0o600)
			}
			if err == nil {
				o.Config, err = config.Load(o.Home, config.LoadOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
		})
		api, err := NewAPIServer(rt, APIServerConfig{Key: testKey, Responses: database.Responses(rt.Store())})
		if err != nil {
			t.Fatal(err)
		}
		go api.Serve()
		t.Cleanup(func() { api.Shutdown(context.Background()) })
		apis[i] = api
	}
	ctx := context.Background()
	prev := ""
	var ids []string
	for turn := 1; turn <= 4; turn++ {
		c := client(apis[turn%2])
		p := responses.ResponseNewParams{Model: "hermes-agent",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fmt.Sprint("turn", turn))}}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		res, err := c.Responses.New(ctx, p)
		if err != nil {
			t.Fatalf("turn %d on replica %d: %v", turn, turn%2, err)
		}
		if want := fmt.Sprintf("echo: turn%d #%d", turn, turn); res.OutputText() != want {
			t.Fatalf("turn %d on replica %d answered %q, want %q (the chain lost its history)", turn, turn%2, res.OutputText(), want)
		}
		prev = res.ID
		ids = append(ids, res.ID)
	}
	a, b := client(apis[0]), client(apis[1])
	got, err := b.Responses.Get(ctx, ids[0], responses.ResponseGetParams{})
	if err != nil || got.ID != ids[0] || got.OutputText() != "echo: turn1 #1" {
		t.Fatalf("replica 1 serving response %s (created on replica 0): %+v %v", ids[0], got, err)
	}
	if err := a.Responses.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Responses.Get(ctx, ids[0], responses.ResponseGetParams{}); err == nil {
		t.Fatal("a response deleted on replica 0 is still served by replica 1")
	}
}
