package store

import (
	"context"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

// searchFixture stores a session whose fourth message mentions a rollout
// and a readiness probe (the conformance suite has the fuller corpus).
func searchFixture(t *testing.T) (*SQLite, Session) {
	t.Helper()
	st := openTestStore(t, "")
	a := mustCreate(t, st, NewSession{})
	mustAppend(t, st, a.ID,
		llm.Message{Role: llm.RoleUser, Content: "The payments service is deploying slowly."},
		llm.Message{Role: llm.RoleAssistant, Content: "Checking the rollout."},
		llm.Message{Role: llm.RoleUser, Content: "ok"},
		llm.Message{Role: llm.RoleAssistant, Content: "The rollout is stuck on a failing readiness probe."},
	)
	return st, a
}

func search(t *testing.T, st *SQLite, o SearchOptions) []Hit {
	t.Helper()
	hits, err := st.Search(context.Background(), o)
	if err != nil {
		t.Fatalf("Search(%+v): %v", o, err)
	}
	return hits
}

func TestSearchIndexFollowsUpdates(t *testing.T) {
	st, a := searchFixture(t)
	ctx := context.Background()
	if _, err := st.db.ExecContext(ctx, "UPDATE messages SET content = 'rewritten hyperdrive' WHERE session_id = ? AND seq = 4", a.ID); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, st, SearchOptions{Query: "readiness"}); len(hits) != 0 {
		t.Fatalf("old text still indexed: %+v", hits)
	}
	if hits := search(t, st, SearchOptions{Query: "hyperdrive"}); len(hits) != 1 {
		t.Fatalf("new text not indexed: %+v", hits)
	}
	if hits := search(t, st, SearchOptions{Query: "perdri"}); len(hits) != 1 {
		t.Fatalf("new text not in trigram index: %+v", hits)
	}
	if err := st.CheckIntegrity(ctx); err != nil {
		t.Fatal(err)
	}
}
