// Package waitfor lets tests wait for an event instead of a wall-clock
// deadline: a condition is polled, and a channel received from, until it
// happens or the test binary's own deadline (go test -timeout, 10 minutes
// by default) is near. On a loaded machine a step that takes 50 ms alone
// can take seconds; a fixed "5 s" failed there although nothing was
// wrong. A test that really hangs still fails, with what it waited for,
// shortly before go test would panic.
//
// It is imported only by tests.
package waitfor

import (
	"context"
	"testing"
	"time"
)

// noDeadline is how long a test may wait when go test runs without a
// timeout (-timeout 0).
const noDeadline = 10 * time.Minute

// Deadline is when a waiting test gives up: the test binary's deadline
// less a margin (a tenth of the time left, at most 30 s), so the failure
// names what was awaited before go test panics.
func Deadline(t testing.TB) time.Time {
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok {
			margin := min(time.Until(d)/10, 30*time.Second)
			return d.Add(-margin)
		}
	}
	return time.Now().Add(noDeadline)
}

// Context returns a context that ends at Deadline or when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), Deadline(t))
	t.Cleanup(cancel)
	return ctx
}

// Until polls cond (every 1 ms at first, backing off to 50 ms) until it
// holds; the test fails with what when Deadline passes first.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(t, cond) {
		t.Fatalf("waited until the test's deadline for %s", what)
	}
}

// Poll is Until without failing: it reports whether cond held before
// Deadline.
func Poll(t testing.TB, cond func() bool) bool {
	deadline := Deadline(t)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// Recv receives one value from ch (the zero value when ch is closed: a
// closed channel is an event too); the test fails with what when Deadline
// passes first.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(time.Until(Deadline(t)))
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waited until the test's deadline for %s", what)
	}
	var zero T
	return zero
}
