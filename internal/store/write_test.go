package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// holdWrites takes the store's write slot in a transaction until the
// returned release is called, so appends made meanwhile queue up and are
// committed as one group.
func holdWrites(t *testing.T, st *SQLite) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		_ = st.inTx(context.Background(), func(*sql.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	return sync.OnceFunc(func() { close(done) })
}

// waitPending waits until n appends are queued.
func waitPending(t *testing.T, st *SQLite, n int) {
	t.Helper()
	waitfor.Until(t, fmt.Sprintf("%d queued appends", n), func() bool {
		st.pendingMu.Lock()
		defer st.pendingMu.Unlock()
		return len(st.pending) == n
	})
}

// Appends from many sessions that wait behind another write are committed
// together; each gets its own seq, in its own session's order, and an
// append to a missing session fails alone without failing the others.
func TestGroupCommitKeepsEachAppend(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	const sessions = 20
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = mustCreate(t, st, NewSession{}).ID
		mustAppend(t, st, ids[i], llm.Message{Role: llm.RoleUser, Content: "first"})
	}
	release := holdWrites(t, st)
	var wg sync.WaitGroup
	seqs := make([]int64, sessions)
	errs := make([]error, sessions)
	for i := range ids {
		wg.Go(func() {
			seqs[i], errs[i] = st.AppendMessage(ctx, ids[i], llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint("answer ", i)})
		})
	}
	var missingErr error
	wg.Go(func() {
		_, missingErr = st.AppendMessage(ctx, "20260101_000000_abcdef", llm.Message{Role: llm.RoleUser, Content: "lost?"})
	})
	waitPending(t, st, sessions+1)
	release()
	wg.Wait()
	if !errors.Is(missingErr, ErrNotFound) {
		t.Fatalf("append to a missing session: got %v, want ErrNotFound", missingErr)
	}
	for i, id := range ids {
		if errs[i] != nil || seqs[i] != 2 {
			t.Fatalf("session %d: seq %d, err %v; want seq 2", i, seqs[i], errs[i])
		}
		msgs, err := st.Messages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[1].Content != fmt.Sprint("answer ", i) {
			t.Fatalf("session %d holds %+v", i, msgs)
		}
		s, err := st.Session(ctx, id)
		if err != nil || s.MessageCount != 2 {
			t.Fatalf("session %d: message_count %d (%v), want 2", i, s.MessageCount, err)
		}
	}
}

// An append whose caller gives up while it waits for the write slot is
// withdrawn: it reports the context's error and is not written later.
func TestCancelledAppendIsNotWrittenLater(t *testing.T) {
	st := openTestStore(t, "")
	id := mustCreate(t, st, NewSession{}).ID
	release := holdWrites(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := st.AppendMessage(ctx, id, llm.Message{Role: llm.RoleUser, Content: "never mind"})
		errc <- err
	}()
	waitPending(t, st, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	release()
	mustAppend(t, st, id, llm.Message{Role: llm.RoleUser, Content: "kept"})
	msgs, err := st.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content != "kept" {
		t.Fatalf("messages %+v, want only the kept one", msgs)
	}
}

// AppendMessageUsage stores the answer and the usage of its model call in
// one commit.
func TestAppendMessageUsageIsOneCommit(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	s := mustCreate(t, st, NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: "list files"})
	before := st.commits.Load()
	answer := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "terminal", Arguments: `{"command":"ls"}`}}}
	seq, err := st.AppendMessageUsage(ctx, s.ID, answer, llm.Usage{InputTokens: 40, OutputTokens: 5}, 1)
	if err != nil || seq != 2 {
		t.Fatalf("AppendMessageUsage = %d, %v; want seq 2", seq, err)
	}
	if n := st.commits.Load() - before; n != 1 {
		t.Errorf("%d commits, want 1", n)
	}
	got, err := st.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 2 || got.ToolCallCount != 1 || got.APICallCount != 1 || got.Usage.InputTokens != 40 || got.Usage.OutputTokens != 5 {
		t.Fatalf("session after AppendMessageUsage: %+v", got)
	}
	if _, err := st.AppendMessageUsage(ctx, "no-such-session", answer, llm.Usage{}, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown session: %v, want ErrNotFound", err)
	}
}
