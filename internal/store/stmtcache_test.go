package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

// Searches reuse prepared statements: repeating a search, past the cache
// bound and from several goroutines at once, returns the same hits, and a
// bad query keeps reporting a *QueryError after its statement is cached.
func TestSearchReusesStatements(t *testing.T) {
	st, _ := searchFixture(t)
	ctx := context.Background()
	ids := func(hits []Hit) []int64 {
		var out []int64
		for _, h := range hits {
			out = append(out, h.MessageID)
		}
		return out
	}
	want := ids(search(t, st, SearchOptions{Query: "rollout"}))
	if len(want) == 0 {
		t.Fatal("fixture: rollout found nothing")
	}
	// Distinct role filters and limits give distinct SQL texts, more than the cache holds.
	for i := range maxCachedStmts + 10 {
		search(t, st, SearchOptions{Query: "rollout", Limit: 20 + i, Roles: []string{"assistant"}})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				hits, err := st.Search(ctx, SearchOptions{Query: "rollout"})
				if err != nil {
					errs <- err
					return
				}
				if got := ids(hits); !slices.Equal(got, want) {
					errs <- errors.New("cached statement returned different hits")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for range 2 {
		var qe *QueryError
		if _, err := st.Search(ctx, SearchOptions{Query: "nosuchcolumn:x"}); !errors.As(err, &qe) {
			t.Fatalf("bad query: got %v, want *QueryError", err)
		}
	}
}

// A run that only writes (create a session, append its messages: what
// `hermes -z` does) works on one SQLite connection. Preparing a statement
// for the cache inside a transaction used to open a second connection,
// paying its pragmas and a second parse of the schema on every start.
func TestWritesUseOneConnection(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "state.db"))
	st.stopCheckpoints() // the background checkpoint may take a connection of its own
	s := mustCreate(t, st, NewSession{Model: "m"})
	turn := []llm.Message{
		{Role: llm.RoleUser, Content: "list the files"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "terminal", Arguments: `{"command":"ls"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: "README.md"},
		{Role: llm.RoleAssistant, Content: "One file."},
	}
	for range 2 {
		mustAppend(t, st, s.ID, turn...)
	}
	if n := st.db.Stats().OpenConnections; n != 1 {
		t.Errorf("open connections after create and appends: %d, want 1", n)
	}
	msgs, err := st.Messages(context.Background(), s.ID)
	if err != nil || len(msgs) != 2*len(turn) {
		t.Fatalf("messages: %d, %v", len(msgs), err)
	}
}
