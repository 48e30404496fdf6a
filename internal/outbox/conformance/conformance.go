// Package conformance is the test suite every outbox.Queue passes.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/outbox"
)

// Handles are the queues one test uses. A and B are two handles on one
// queue as two replicas have them (the file queue, owned by one process,
// gives the same handle twice); Reopen returns a handle as a restarted
// process gets it.
type Handles struct {
	A, B   outbox.Queue
	Reopen func() outbox.Queue
}

// t0 is the suite's clock start (millisecond precision, as stored).
var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

const lease = time.Minute

// Run tests the queues open returns, each call on an empty queue.
func Run(t *testing.T, open func(t *testing.T) Handles) {
	t.Run("AddClaimAck", func(t *testing.T) { addClaimAck(t, open(t)) })
	t.Run("RetryBackoff", func(t *testing.T) { retryBackoff(t, open(t)) })
	t.Run("ClaimLeaseExpires", func(t *testing.T) { leaseExpires(t, open(t)) })
	t.Run("OrderPerChat", func(t *testing.T) { orderPerChat(t, open(t)) })
	t.Run("PlatformsApart", func(t *testing.T) { platformsApart(t, open(t)) })
	t.Run("ConcurrentClaimsNeverShare", func(t *testing.T) { concurrentClaims(t, open(t)) })
}

func parts(texts ...string) json.RawMessage {
	var ps []map[string]string
	for _, s := range texts {
		ps = append(ps, map[string]string{"text": s})
	}
	b, _ := json.Marshal(ps)
	return b
}

func claim(t *testing.T, q outbox.Queue, platform string, now time.Time) []outbox.Reply {
	t.Helper()
	rs, err := q.Claim(context.Background(), platform, now, lease)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func addClaimAck(t *testing.T, h Handles) {
	ctx := context.Background()
	if has, err := h.A.Has(ctx, "telegram", "42"); err != nil || has {
		t.Fatalf("Has on an empty queue = %v, %v", has, err)
	}
	if at, err := h.A.Next(ctx, "telegram"); err != nil || !at.IsZero() {
		t.Fatalf("Next on an empty queue = %v, %v; want zero", at, err)
	}
	must(t, h.A.Add(ctx, "telegram", "42", parts("one", "two"), t0, t0.Add(time.Second)))
	q := h.Reopen()
	if has, err := q.Has(ctx, "telegram", "42"); err != nil || !has {
		t.Fatalf("Has after Add, from another handle = %v, %v", has, err)
	}
	if n, err := q.Len(ctx, "telegram"); err != nil || n != 1 {
		t.Fatalf("Len = %d, %v; want 1", n, err)
	}
	if rs := claim(t, h.A, "telegram", t0); len(rs) != 0 {
		t.Fatalf("claimed %d replies before they were due", len(rs))
	}
	rs := claim(t, q, "telegram", t0.Add(time.Hour)) // a restart may retry at once: any time after due
	if len(rs) != 1 {
		t.Fatalf("claimed %d replies once due; want 1", len(rs))
	}
	r := rs[0]
	var got []map[string]string
	if err := json.Unmarshal(r.Parts, &got); err != nil || len(got) != 2 || got[1]["text"] != "two" {
		t.Fatalf("claimed parts %s (%v); want the two parts added", r.Parts, err)
	}
	if r.Chat != "42" || r.Platform != "telegram" || !r.Created.Equal(t0) || r.Attempts != 0 {
		t.Fatalf("claimed %+v; want chat 42 of telegram created %v, 0 attempts", r, t0)
	}
	must(t, q.Ack(ctx, "telegram", r.ID))
	if err := q.Ack(ctx, "telegram", r.ID); !errors.Is(err, outbox.ErrNotClaimed) {
		t.Fatalf("second Ack = %v; want ErrNotClaimed", err)
	}
	if n, err := h.Reopen().Len(ctx, "telegram"); err != nil || n != 0 {
		t.Fatalf("Len after Ack = %d, %v; want 0", n, err)
	}
}

func retryBackoff(t *testing.T, h Handles) {
	ctx := context.Background()
	must(t, h.A.Add(ctx, "slack", "C1", parts("a", "b", "c"), t0, t0))
	r := claim(t, h.A, "slack", t0)[0]
	if err := h.A.Retry(ctx, "slack", r.ID+1000, parts("x"), t0, "x"); !errors.Is(err, outbox.ErrNotClaimed) {
		t.Fatalf("Retry of an unknown id = %v; want ErrNotClaimed", err)
	}
	backoff := t0.Add(30 * time.Second)
	must(t, h.A.Retry(ctx, "slack", r.ID, parts("c"), backoff, "429 Too Many Requests"))
	if at, err := h.B.Next(ctx, "slack"); err != nil || !at.Equal(backoff) {
		t.Fatalf("Next after Retry = %v, %v; want the backoff time %v", at, err, backoff)
	}
	if rs := claim(t, h.B, "slack", backoff.Add(-time.Millisecond)); len(rs) != 0 {
		t.Fatalf("a reply was claimed %d times before its backoff ended", len(rs))
	}
	rs := claim(t, h.B, "slack", backoff)
	if len(rs) != 1 || rs[0].Attempts != 1 || rs[0].LastErr != "429 Too Many Requests" || !rs[0].Created.Equal(t0) {
		t.Fatalf("claimed after backoff: %+v; want 1 reply, 1 attempt, the last error, created %v", rs, t0)
	}
	if string(rs[0].Parts) != string(parts("c")) {
		t.Fatalf("parts after Retry = %s; want only the undelivered part %s", rs[0].Parts, parts("c"))
	}
}

func leaseExpires(t *testing.T, h Handles) {
	ctx := context.Background()
	must(t, h.A.Add(ctx, "discord", "D", parts("hi"), t0, t0))
	if got := claim(t, h.A, "discord", t0); len(got) != 1 {
		t.Fatalf("claimed %d; want 1", len(got))
	}
	if got := claim(t, h.B, "discord", t0.Add(lease-time.Millisecond)); len(got) != 0 {
		t.Fatalf("a held claim was claimed again by another handle: %+v", got)
	}
	if at, err := h.B.Next(ctx, "discord"); err != nil || !at.Equal(t0.Add(lease)) {
		t.Fatalf("Next while claimed = %v, %v; want the claim's end %v", at, err, t0.Add(lease))
	}
	// The holder died: after the lease another handle takes the reply over.
	got := claim(t, h.B, "discord", t0.Add(lease))
	if len(got) != 1 {
		t.Fatalf("claimed %d after the lease ran out; want 1", len(got))
	}
	must(t, h.B.Ack(ctx, "discord", got[0].ID))
}

func orderPerChat(t *testing.T, h Handles) {
	ctx := context.Background()
	must(t, h.A.Add(ctx, "telegram", "1", parts("first"), t0, t0.Add(time.Hour))) // backing off
	must(t, h.A.Add(ctx, "telegram", "1", parts("second"), t0, t0))               // due, but behind
	must(t, h.A.Add(ctx, "telegram", "2", parts("other"), t0, t0))
	rs := claim(t, h.B, "telegram", t0)
	if len(rs) != 1 || rs[0].Chat != "2" {
		t.Fatalf("claimed %+v; want only chat 2 (chat 1's later reply waits for its earlier one)", rs)
	}
	must(t, h.B.Ack(ctx, "telegram", rs[0].ID))
	rs = claim(t, h.B, "telegram", t0.Add(time.Hour))
	if len(rs) != 1 || string(rs[0].Parts) != string(parts("first")) {
		t.Fatalf("claimed %+v; want chat 1's first reply", rs)
	}
	if again := claim(t, h.A, "telegram", t0.Add(time.Hour)); len(again) != 0 {
		t.Fatalf("claimed %+v while chat 1's head is held; want nothing", again)
	}
	must(t, h.B.Ack(ctx, "telegram", rs[0].ID))
	rs = claim(t, h.A, "telegram", t0.Add(time.Hour))
	if len(rs) != 1 || string(rs[0].Parts) != string(parts("second")) {
		t.Fatalf("claimed %+v after the first was acknowledged; want chat 1's second reply", rs)
	}
}

func platformsApart(t *testing.T, h Handles) {
	ctx := context.Background()
	must(t, h.A.Add(ctx, "telegram", "7", parts("t"), t0, t0))
	must(t, h.A.Add(ctx, "slack", "7", parts("s"), t0, t0))
	rs := claim(t, h.B, "slack", t0)
	if len(rs) != 1 || rs[0].Platform != "slack" || string(rs[0].Parts) != string(parts("s")) {
		t.Fatalf("slack claimed %+v; want only its own reply", rs)
	}
	if n, err := h.B.Len(ctx, "telegram"); err != nil || n != 1 {
		t.Fatalf("telegram Len = %d, %v; want 1", n, err)
	}
	if err := h.A.Ack(ctx, "telegram", rs[0].ID); !errors.Is(err, outbox.ErrNotClaimed) {
		t.Fatalf("acknowledging slack's claim as telegram's = %v; want ErrNotClaimed", err)
	}
}

// concurrentClaims: 100 chats, two handles claiming at once, many rounds:
// every reply is claimed exactly once.
func concurrentClaims(t *testing.T, h Handles) {
	ctx := context.Background()
	const chats = 100
	for i := range chats {
		must(t, h.A.Add(ctx, "telegram", fmt.Sprint(i), parts(fmt.Sprint("r", i)), t0, t0))
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, q := range []outbox.Queue{h.A, h.B, h.A, h.B} {
		wg.Go(func() {
			for range 5 {
				rs, err := q.Claim(ctx, "telegram", t0, lease)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, r := range rs {
					seen[r.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != chats {
		t.Fatalf("%d of %d replies claimed", len(seen), chats)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("reply %d was claimed %d times by concurrent handles", id, n)
		}
	}
}
