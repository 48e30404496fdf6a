package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// Regression (issue 8): a run killed in its first milliseconds left a
// session row without messages, and `-c` continued that empty session
// instead of the last real one. A deferred session has no row until its
// first message, which is stored in the same transaction.
func TestDeferredSessionWrittenWithFirstMessage(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	real := mustCreate(t, st, NewSession{})
	mustAppend(t, st, real.ID, llm.Message{Role: llm.RoleUser, Content: "real work"})

	rec := NewRecorder(st)
	id, err := st.NewSessionID()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Defer(NewSession{ID: id, Source: "oneshot", SystemPrompt: "sys"}); err != nil {
		t.Fatal(err)
	}
	// Killed here: nothing was written.
	if _, err := st.Session(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deferred session exists before its first message: %v", err)
	}
	if latest, err := st.Latest(ctx, ""); err != nil || latest.ID != real.ID {
		t.Fatalf("Latest = %v, %v; want %s", latest.ID, err, real.ID)
	}
	if seq, err := rec.AppendMessage(ctx, id, llm.Message{Role: llm.RoleUser, Content: "hello"}); err != nil || seq != 1 {
		t.Fatalf("first append: %d, %v", seq, err)
	}
	if _, err := rec.AppendMessage(ctx, id, llm.Message{Role: llm.RoleAssistant, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	s, err := st.Session(ctx, id)
	if err != nil || s.SystemPrompt != "sys" || s.Source != "oneshot" || s.MessageCount != 2 {
		t.Fatalf("stored session = %+v, %v", s, err)
	}
	if rec.Pending(id) {
		t.Fatal("still pending after its first message")
	}
}

// Empty sessions (from older builds) are skipped by Latest and pruned once
// old, unless a run holds their lock.
func TestEmptySessionsSkippedAndPruned(t *testing.T) {
	st := openTestStore(t, "") // the test clock advances 1 s per reading
	ctx := context.Background()
	real := mustCreate(t, st, NewSession{})
	mustAppend(t, st, real.ID, llm.Message{Role: llm.RoleUser, Content: "real work"})
	empty := mustCreate(t, st, NewSession{})
	locked := mustCreate(t, st, NewSession{})
	if latest, err := st.Latest(ctx, ""); err != nil || latest.ID != real.ID {
		t.Fatalf("Latest = %v, %v; want the non-empty %s, not %s", latest.ID, err, real.ID, empty.ID)
	}
	if latest, err := st.Resolve(ctx, "latest"); err != nil || latest.ID != real.ID {
		t.Fatalf(`Resolve("latest") = %v, %v`, latest.ID, err)
	}
	unlock, err := st.LockSession(ctx, locked.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if n, err := st.PruneEmpty(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("young empties pruned: %d, %v", n, err)
	}
	if n, err := st.PruneEmpty(ctx, 0); err != nil || n != 1 {
		t.Fatalf("PruneEmpty = %d, %v; want the one unlocked empty session", n, err)
	}
	for id, want := range map[string]bool{real.ID: true, empty.ID: false, locked.ID: true} {
		if _, err := st.Session(ctx, id); (err == nil) != want {
			t.Errorf("session %s exists = %v, want %v", id, err == nil, want)
		}
	}
}
