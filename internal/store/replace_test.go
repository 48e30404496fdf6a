package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

func TestReplaceActiveArchivesOnlyTheMiddle(t *testing.T) {
	ctx := context.Background()
	st, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.CreateSession(ctx, NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	var h []llm.Message
	for i, c := range []string{"first question", "first answer", "middle zebra one", "middle zebra two", "last question", "last answer"} {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		m := llm.Message{Role: role, Content: c}
		h = append(h, m)
		if _, err := st.AppendMessage(ctx, sess.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	summary := llm.Message{Role: llm.RoleUser, Content: "[summary] zebras were discussed"}
	compacted := append(append(append([]llm.Message{}, h[:2]...), summary), h[4:]...)
	if err := st.ReplaceActive(ctx, sess.ID, compacted); err != nil {
		t.Fatal(err)
	}
	got, err := st.Messages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(compacted) {
		t.Fatalf("active conversation has %d messages, want %d: %+v", len(got), len(compacted), got)
	}
	for i := range got {
		if !sameMessage(got[i], compacted[i]) {
			t.Errorf("message %d = %q, want %q", i, got[i].Content, compacted[i].Content)
		}
	}
	all, err := st.StoredMessages(ctx, sess.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	// 6 originals (2 archived) + 1 summary: the kept messages are not copied.
	if len(all) != 7 {
		t.Errorf("stored rows = %d, want 7 (no duplicated kept messages)", len(all))
	}
	// Archived messages stay searchable, and each appears once.
	hits, err := st.Search(ctx, SearchOptions{Query: "zebra", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, hit := range hits {
		seen[hit.Snippet]++
	}
	for s, n := range seen {
		if n > 1 {
			t.Errorf("hit %q returned %d times", s, n)
		}
	}
	if len(hits) < 2 {
		t.Errorf("archived middle should stay searchable; got %d hits", len(hits))
	}
}

// Several processes opening a fresh state.db at once must all succeed
// (regression: "table sessions already exists" from a racing migration).
func TestConcurrentOpenOfFreshStore(t *testing.T) {
	for round := 0; round < 5; round++ {
		path := filepath.Join(t.TempDir(), FileName)
		errs := make(chan error, 6)
		for i := 0; i < 6; i++ {
			go func() {
				st, err := Open(path)
				if err == nil {
					err = st.Close()
				}
				errs <- err
			}()
		}
		for i := 0; i < 6; i++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
