package sessionsearch_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
)

// openPostgresCorpus copies the SQLite corpus into the schema
// bench_corpus_N of HERMES_BENCH_DATABASE_URL on first use (database.Copy
// skips what an earlier run copied) and opens it.
func openPostgresCorpus(b *testing.B) store.Store {
	b.Helper()
	url := os.Getenv("HERMES_BENCH_DATABASE_URL")
	if url == "" {
		b.Skip("set HERMES_BENCH_DATABASE_URL to a PostgreSQL database to benchmark it")
	}
	lite := openCorpus(b)
	ctx := context.Background()
	pg, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: fmt.Sprintf("bench_corpus_%d", corpusMessages())})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close() })
	if _, err := database.Copy(ctx, lite, pg, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := pg.Pool().Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return pg
}
