package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/store"
)

// A session's turn lock is exclusive across Store handles (processes open
// their own), is released by unlock, and names its holder when busy.
func checkLockSessionExclusive(t *testing.T, tg *fixture) {
	a := tg.open(t)
	b := tg.openWith(t, store.WithClock(tg.clock.Now))
	ctx := context.Background()
	unlock, err := a.LockSession(ctx, "s1", "hermes chat")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.LockSession(ctx, "s1", "gateway")
	var busy *store.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, store.ErrSessionBusy) || busy.Owner != "hermes chat" {
		t.Fatalf("second lock: %v, want busy held by hermes chat", err)
	}
	if !strings.Contains(err.Error(), "s1") || !strings.Contains(err.Error(), "pid") {
		t.Errorf("busy error %q does not name the session and holder pid", err)
	}
	// Another session is independent.
	u2, err := b.LockSession(ctx, "s2", "gateway")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	unlock()
	unlock() // twice is harmless
	u3, err := b.LockSession(ctx, "s1", "gateway")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	u3()
}

// store.WaitLockSession tells the caller once that it waits, then gets the lock
// when the holder releases it; a cancelled context ends the wait.
func checkWaitLockSession(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	unlock, err := st.LockSession(ctx, "s", "first")
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan *store.BusyError, 2)
	got := make(chan error, 1)
	go func() {
		u, err := store.WaitLockSession(ctx, st, "s", "second", 10*time.Millisecond, func(b *store.BusyError) { told <- b })
		if err == nil {
			u()
		}
		got <- err
	}()
	b := <-told
	if b.Owner != "first" {
		t.Fatalf("waiting notice names %q", b.Owner)
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(told) != 0 {
		t.Fatal("the waiting notice was given more than once")
	}

	unlock, _ = st.LockSession(ctx, "s", "first")
	defer unlock()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := store.WaitLockSession(cctx, st, "s", "second", 0, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
