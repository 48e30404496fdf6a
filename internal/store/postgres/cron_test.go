package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/cron/conformance"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// TestCronConformance runs the cron.Jobs suite with every handle a
// separate connection pool and HERMES_HOME, as replicas on separate
// machines have: three schedulers on one database run each of 100 due
// jobs exactly once.
func TestCronConformance(t *testing.T) {
	postgrestest.URL(t)
	conformance.Run(t, func(t *testing.T, n int, now func() time.Time) []cron.Jobs {
		url, schema := postgrestest.Schema(t)
		out := make([]cron.Jobs, n)
		for i := range out {
			db, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema}, store.WithClock(now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			out[i] = db.Cron(t.TempDir())
		}
		return out
	})
}
