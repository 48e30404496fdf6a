package postgres_test

import (
	"context"
	"testing"

	"github.com/hermes-go/hermes/internal/responsestore"
	"github.com/hermes-go/hermes/internal/responsestore/conformance"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// openTwo opens two handles (two pools, as two replicas have) on one
// fresh schema.
func openTwo(t *testing.T) (a, b *postgres.DB) {
	t.Helper()
	url, schema := postgrestest.Schema(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open(), open()
}

func TestResponsesConformance(t *testing.T) {
	postgrestest.URL(t)
	conformance.Run(t, func(t *testing.T) (a, b responsestore.Store) {
		x, y := openTwo(t)
		return x.Responses(), y.Responses()
	})
}
