package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
)

// A new session's row is written with its first message, so a session
// nobody spoke in leaves nothing in state.db (and `-c` skips nothing).
func TestNewSessionRowWrittenWithFirstMessage(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rt.Recorder().Pending(s.ID()) {
		t.Fatal("new session not pending")
	}
	if _, err := rt.Store().Session(context.Background(), s.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("row of an unused session: %v", err)
	}
	turn, _, _ := s.Send(context.Background(), "hi", SendOptions{})
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := rt.Store().Session(context.Background(), s.ID())
	if err != nil || st.MessageCount != 2 || st.SystemPrompt == "" {
		t.Fatalf("stored session %+v %v", st, err)
	}
}

// Every turn takes the Options.Lock turn lock: while another process holds
// it the turn waits (and says so once), then it continues from the history
// that process stored.
func TestTurnWaitsForLockAndReloadsHistory(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	told := make(chan string, 4)
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.Lock = WaitLock("test run", func(b *store.BusyError) { told <- b.Error() })
	})
	ctx := context.Background()
	s, _ := rt.Open(ctx, OpenOptions{})
	first, _, _ := s.Send(ctx, "one", SendOptions{})
	if _, err := first.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// "Another process": holds the lock and stores a turn of its own.
	unlock, err := rt.Store().LockSession(ctx, s.ID(), "other run")
	if err != nil {
		t.Fatal(err)
	}
	st := rt.Store()
	for _, m := range []llm.Message{{Role: llm.RoleUser, Content: "from elsewhere"}, {Role: llm.RoleAssistant, Content: "noted"}} {
		if _, err := st.AppendMessage(ctx, s.ID(), m); err != nil {
			t.Fatal(err)
		}
	}
	second, _, _ := s.Send(ctx, "two", SendOptions{})
	var msg string
	select {
	case msg = <-told:
	case <-second.Done():
		t.Fatal("turn ran while another process held the lock")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d model calls while the lock was held, want 1", n)
	}
	unlock()
	res, err := second.Wait(ctx)
	if err != nil || res.Text != "echo: two" {
		t.Fatalf("second: %+v %v", res, err)
	}
	if !strings.Contains(msg, "other run") || len(told) != 0 {
		t.Fatalf("waiting told %q (+%d more)", msg, len(told))
	}
	reqs := srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "from elsewhere") {
		t.Fatalf("the other process's turn is missing from the request: %s", body)
	}
}
