package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Target{
		New: func(t *testing.T) conformance.Opener {
			path := filepath.Join(t.TempDir(), store.FileName)
			return func(t *testing.T, opts ...store.Option) store.Store {
				t.Helper()
				st, err := store.Open(path, opts...)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		Check: func(t *testing.T, st store.Store) {
			t.Helper()
			if err := st.(*store.SQLite).CheckIntegrity(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
	})
}
