// Package conformance is the test suite every responsestore.Store passes.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/responsestore"
)

// Run tests the stores open returns. open returns two handles on one
// store (for PostgreSQL: two connection pools on one schema, as two
// replicas would have; for memory: the same value twice).
func Run(t *testing.T, open func(t *testing.T) (a, b responsestore.Store)) {
	t.Run("PutGetDelete", func(t *testing.T) { putGetDelete(t, open) })
	t.Run("ReplaceKeepsOne", func(t *testing.T) { replace(t, open) })
	t.Run("ConcurrentPuts", func(t *testing.T) { concurrent(t, open) })
}

func body(id, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": id, "object": "response", "output_text": text, "status": "completed"})
	return b
}

func putGetDelete(t *testing.T, open func(t *testing.T) (a, b responsestore.Store)) {
	ctx := context.Background()
	a, b := open(t)
	if _, err := a.Get(ctx, "resp_missing"); !errors.Is(err, responsestore.ErrNotFound) {
		t.Fatalf("Get of a missing id: %v, want ErrNotFound", err)
	}
	want := responsestore.Response{ID: "resp_1", SessionID: "20261205_120000_abcdef", Body: body("resp_1", "héllo \"quoted\" 日本")}
	if err := a.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "resp_1")
	if err != nil {
		t.Fatalf("the other handle does not see the response: %v", err)
	}
	if got.ID != want.ID || got.SessionID != want.SessionID || !jsonEqual(got.Body, want.Body) {
		t.Fatalf("Get = %+v (%s), want %+v (%s)", got, got.Body, want, want.Body)
	}
	ok, err := b.Delete(ctx, "resp_1")
	if err != nil || !ok {
		t.Fatalf("Delete = %v, %v; want true", ok, err)
	}
	if _, err := a.Get(ctx, "resp_1"); !errors.Is(err, responsestore.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if ok, err := a.Delete(ctx, "resp_1"); err != nil || ok {
		t.Fatalf("second Delete = %v, %v; want false", ok, err)
	}
}

func replace(t *testing.T, open func(t *testing.T) (a, b responsestore.Store)) {
	ctx := context.Background()
	a, b := open(t)
	if err := a.Put(ctx, responsestore.Response{ID: "resp_r", SessionID: "s1", Body: body("resp_r", "first")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, responsestore.Response{ID: "resp_r", SessionID: "s2", Body: body("resp_r", "second")}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(ctx, "resp_r")
	if err != nil || got.SessionID != "s2" || !jsonEqual(got.Body, body("resp_r", "second")) {
		t.Fatalf("after replacing: %+v %v", got, err)
	}
	if ok, _ := a.Delete(ctx, "resp_r"); !ok {
		t.Fatal("Delete of the replaced response found nothing")
	}
	if _, err := b.Get(ctx, "resp_r"); !errors.Is(err, responsestore.ErrNotFound) {
		t.Fatalf("a replaced response left a copy behind: %v", err)
	}
}

func concurrent(t *testing.T, open func(t *testing.T) (a, b responsestore.Store)) {
	ctx := context.Background()
	a, b := open(t)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			id := fmt.Sprintf("resp_c%d", i)
			errs <- s.Put(ctx, responsestore.Response{ID: id, SessionID: fmt.Sprintf("s%d", i), Body: body(id, "x")})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		got, err := a.Get(ctx, fmt.Sprintf("resp_c%d", i))
		if err != nil || got.SessionID != fmt.Sprintf("s%d", i) {
			t.Fatalf("response %d: %+v %v", i, got, err)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
