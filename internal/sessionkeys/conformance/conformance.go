// Package conformance is the test suite every sessionkeys.Index passes.
package conformance

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/sessionkeys"
)

// Run tests the indexes open returns: two handles on one index (two
// processes on one HERMES_HOME, or two replicas on one database).
// reopen, when not nil, returns a fresh handle as a restarted process
// gets it (the file index reads its file once).
func Run(t *testing.T, open func(t *testing.T) (a, reopen func() sessionkeys.Index)) {
	t.Run("SetGetKeyOf", func(t *testing.T) {
		ctx := context.Background()
		a, reopen := open(t)
		x := a()
		if id, err := x.Get(ctx, "agent:main:telegram:dm:42"); err != nil || id != "" {
			t.Fatalf("Get of an unknown key = %q, %v", id, err)
		}
		must(t, x.Set(ctx, "agent:main:telegram:dm:42", "s1"))
		must(t, x.Set(ctx, "agent:main:telegram:dm:42", "s2")) // /new: the key moves on
		must(t, x.Set(ctx, "b-key", "s3"))
		must(t, x.Set(ctx, "a-key", "s3"))
		y := reopen()
		if id, err := y.Get(ctx, "agent:main:telegram:dm:42"); err != nil || id != "s2" {
			t.Fatalf("Get after the key moved = %q, %v; want s2", id, err)
		}
		if key, err := y.KeyOf(ctx, "s3"); err != nil || key != "a-key" {
			t.Fatalf("KeyOf(s3) = %q, %v; want the smallest key, a-key", key, err)
		}
		if key, err := y.KeyOf(ctx, "s1"); err != nil || key != "" {
			t.Fatalf("KeyOf of a session no key points at = %q, %v", key, err)
		}
	})
	t.Run("ConcurrentSetsAllKept", func(t *testing.T) {
		ctx := context.Background()
		a, reopen := open(t)
		x := a()
		const n = 200
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = x.Set(ctx, fmt.Sprint("telegram:", i), fmt.Sprint("id-", i)) })
		}
		wg.Wait()
		y := reopen()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("set %d: %v", i, errs[i])
			}
			if got, err := y.Get(ctx, fmt.Sprint("telegram:", i)); err != nil || got != fmt.Sprint("id-", i) {
				t.Fatalf("key %d reads %q (%v) from another handle", i, got, err)
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
