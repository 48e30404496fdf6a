package postgres_test

import (
	"context"
	"testing"

	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/conformance"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func TestConformance(t *testing.T) {
	postgrestest.URL(t)
	conformance.Run(t, conformance.Target{
		New: func(t *testing.T) conformance.Opener {
			url, schema := postgrestest.Schema(t)
			return func(t *testing.T, opts ...store.Option) store.Store {
				t.Helper()
				db, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				return db
			}
		},
	})
}
