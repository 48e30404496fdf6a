package responsestore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hermes-go/hermes/internal/responsestore"
	"github.com/hermes-go/hermes/internal/responsestore/conformance"
)

func TestMemoryConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) (a, b responsestore.Store) {
		m := responsestore.NewMemory(0)
		return m, m
	})
}

func TestMemoryForgetsTheOldestPastItsBound(t *testing.T) {
	ctx := context.Background()
	m := responsestore.NewMemory(3)
	for i := range 5 {
		if err := m.Put(ctx, responsestore.Response{ID: fmt.Sprint(i), Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		_, err := m.Get(ctx, fmt.Sprint(i))
		if kept := i >= 2; kept != (err == nil) {
			t.Fatalf("response %d: kept=%v but Get error %v", i, kept, err)
		}
		if err != nil && !errors.Is(err, responsestore.ErrNotFound) {
			t.Fatal(err)
		}
	}
}
