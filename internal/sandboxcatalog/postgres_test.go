package sandboxcatalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/sandboxcatalog/catalogtest"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func openPostgres(t *testing.T, url, schema string) *sandboxcatalog.Postgres {
	t.Helper()
	c, err := sandboxcatalog.OpenPostgres(context.Background(), url, schema)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPostgresConformance(t *testing.T) {
	postgrestest.URL(t)
	catalogtest.Run(t, func(t *testing.T) func() sandboxcatalog.Catalog {
		url, schema := postgrestest.Schema(t)
		return func() sandboxcatalog.Catalog { return openPostgres(t, url, schema) }
	})
}

// A catalog schema written by a newer hermes is refused, naming the schema.
func TestPostgresRefusesNewerSchema(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	c := openPostgres(t, url, schema)
	if err := c.SetVersionForTest(context.Background(), 99); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := sandboxcatalog.OpenPostgres(context.Background(), url, schema); err == nil ||
		!strings.Contains(err.Error(), schema) || !strings.Contains(err.Error(), "newer hermes") {
		t.Fatalf("catalog schema 99: %v", err)
	}
}

// An unreachable server's error names the host, never the URL's password.
func TestPostgresErrorHidesPassword(t *testing.T) {
	const url = "postgres://hermes:s3cret-pw@127.0.0.1:1/nodb?connect_timeout=2"
	_, err := sandboxcatalog.OpenPostgres(context.Background(), url, "")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error %v: want the host and no password", err)
	}
}
