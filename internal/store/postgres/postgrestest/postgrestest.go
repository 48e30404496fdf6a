// Package postgrestest gives tests a PostgreSQL database of their own:
// the server .ci/run starts (HERMES_TEST_DATABASE_URL, a throwaway
// cluster; see .ci/postgres-cluster) and a fresh schema per test, dropped
// when the test ends, so parallel tests and packages never see each
// other's rows. Without the variable the test is skipped with the reason.
package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the test server's URL.
const URLEnv = "HERMES_TEST_DATABASE_URL"

// URL returns the test server's URL, or skips t when none is configured.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(URLEnv)
	if url == "" {
		t.Skipf("no PostgreSQL for this test: set %s (.ci/run starts a throwaway cluster with .ci/postgres-cluster)", URLEnv)
	}
	return url
}

// Schema returns the URL and the name of a schema no other test uses
// (hermes_test_ and 12 random hex digits); the schema and everything in it
// are dropped when t ends.
func Schema(t testing.TB) (url, schema string) {
	t.Helper()
	url = URL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema = "hermes_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return url, schema
}
