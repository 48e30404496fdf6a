// Package catalogtest is the conformance suite of sandboxcatalog.Catalog:
// every implementation (SQLite on one node, a fleet's PostgreSQL) runs Run.
package catalogtest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// Run checks an implementation. store returns, for one test, a function
// that opens a new handle on one empty store (each call another handle on
// the same data, as a restarted server gets); Run closes every handle.
func Run(t *testing.T, store func(t *testing.T) func() sandboxcatalog.Catalog) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, store(t)) })
	t.Run("ReplaceAndDelete", func(t *testing.T) { replaceAndDelete(t, store(t)) })
	t.Run("Nodes", func(t *testing.T) { nodes(t, store(t)) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, store(t)) })
	t.Run("Closed", func(t *testing.T) { closed(t, store(t)) })
}

func opened(t *testing.T, open func() sandboxcatalog.Catalog) sandboxcatalog.Catalog {
	c := open()
	t.Cleanup(func() { c.Close() })
	return c
}

// full is a record with every field set.
func full(id string) sandboxcatalog.Record {
	no := false
	at := time.Date(2026, 12, 5, 18, 0, 0, 123456789, time.UTC)
	return sandboxcatalog.Record{ID: id, Task: "sbx-" + id, Node: "node-a", Tenant: "key:0123456789abcdef", Template: "hermes",
		State: sandboxcatalog.StatePaused, Resume: true, Remaining: 42 * time.Second, AutoPause: true, StartedAt: at,
		EndAt: at.Add(time.Minute), Token: "tok-" + id, Metadata: map[string]string{"hermes_task": "t1"},
		Env: map[string]string{"A": "1", "B": "two words"}, AllowInternet: &no,
		Network: &sandboxcatalog.Network{AllowOut: []string{"1.2.3.4"}, DenyOut: []string{"10.0.0.0/8"}}}
}

func list(t *testing.T, c sandboxcatalog.Catalog, node string) []sandboxcatalog.Record {
	t.Helper()
	recs, err := c.List(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func same(a, b sandboxcatalog.Record) bool {
	return a.StartedAt.Equal(b.StartedAt) && a.EndAt.Equal(b.EndAt) && reflect.DeepEqual(strip(a), strip(b))
}

func strip(r sandboxcatalog.Record) sandboxcatalog.Record {
	r.StartedAt, r.EndAt = time.Time{}, time.Time{}
	if len(r.Env) == 0 {
		r.Env = nil
	}
	return r
}

// roundTrip: every field comes back, through another handle (a restart).
func roundTrip(t *testing.T, open func() sandboxcatalog.Catalog) {
	ctx := context.Background()
	rec := full("a1")
	bare := sandboxcatalog.Record{ID: "b2", Task: "sbx-b2", Node: "node-a", Tenant: "local", Template: "base",
		State: sandboxcatalog.StateRunning, StartedAt: rec.StartedAt.Add(time.Second), EndAt: rec.StartedAt.Add(time.Hour), Token: "t"}
	c := open()
	for _, r := range []sandboxcatalog.Record{bare, rec} {
		if err := c.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	got := list(t, opened(t, open), "node-a")
	if len(got) != 2 || !same(got[0], rec) || !same(got[1], bare) {
		t.Fatalf("read back %+v\nwant %+v and %+v (oldest first)", got, rec, bare)
	}
}

func replaceAndDelete(t *testing.T, open func() sandboxcatalog.Catalog) {
	ctx := context.Background()
	c := opened(t, open)
	rec := full("r1")
	c.Put(ctx, rec)
	rec.State, rec.Resume, rec.Remaining, rec.Metadata = sandboxcatalog.StateRunning, false, 0, nil
	if err := c.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := list(t, c, rec.Node); len(got) != 1 || !same(got[0], rec) {
		t.Fatalf("after a replace: %+v, want %+v", got, rec)
	}
	if err := c.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, rec.ID); err != nil {
		t.Fatalf("deleting a missing record: %v, want no error", err)
	}
	if got := list(t, c, rec.Node); len(got) != 0 {
		t.Fatalf("after delete: %+v", got)
	}
}

func nodes(t *testing.T, open func() sandboxcatalog.Catalog) {
	ctx := context.Background()
	c := opened(t, open)
	a, b := full("n1"), full("n2")
	b.Node = "node-b"
	c.Put(ctx, a)
	c.Put(ctx, b)
	if got := list(t, c, "node-b"); len(got) != 1 || got[0].ID != "n2" {
		t.Fatalf("node-b lists %+v, want n2 only", got)
	}
	if got := list(t, c, "node-c"); len(got) != 0 {
		t.Fatalf("node-c lists %+v, want none", got)
	}
}

// concurrent: 20 writers at once (a server's sandboxes changing together,
// as at its shutdown) lose nothing.
func concurrent(t *testing.T, open func() sandboxcatalog.Catalog) {
	c := opened(t, open)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			r := full(fmt.Sprintf("c%02d", i))
			r.StartedAt = r.StartedAt.Add(time.Duration(i) * time.Second)
			errs <- c.Put(context.Background(), r)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := list(t, c, "node-a"); len(got) != 20 || got[0].ID != "c00" || got[19].ID != "c19" {
		t.Fatalf("%d records after 20 concurrent puts", len(got))
	}
}

func closed(t *testing.T, open func() sandboxcatalog.Catalog) {
	c := open()
	c.Close()
	if err := c.Put(context.Background(), full("x")); err == nil {
		t.Fatal("Put after Close succeeded")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
