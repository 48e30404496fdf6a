package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// With database.backend: postgres, doctor reports the server's version and
// the schema's (not created yet; existing with a sandbox fleet's tables
// only; then current after a run creates it), and no state.db line;
// an unreachable server is ✗ naming the host and variable, never the
// password.
func TestDoctorChecksPostgres(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	ta := newTestApp(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test", "HERMES_DATABASE_URL": url}, "", false)
	cfg := "database:\n  backend: postgres\n  schema: " + schema + "\n"
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ta.run("doctor", "--offline")
	out := ta.stdout.String()
	if !strings.Contains(out, "✓ database: PostgreSQL ") || !strings.Contains(out, "schema "+schema) ||
		!strings.Contains(out, "✓ database schema: schema "+schema+" not created yet") || strings.Contains(out, "state.db") {
		t.Fatalf("doctor before the first run:\n%s", out)
	}
	// A sandbox fleet's catalog in the same schema: the schema exists with
	// its tables only (doctor said "not created yet").
	cat, err := sandboxcatalog.OpenPostgres(context.Background(), url, schema)
	if err != nil {
		t.Fatal(err)
	}
	cat.Close()
	ta.run("doctor", "--offline")
	if out := ta.stdout.String(); !strings.Contains(out, "✓ database schema: schema "+schema+" exists (tables ") ||
		!strings.Contains(out, "without the session tables yet") || strings.Contains(out, "not created yet") {
		t.Fatalf("doctor with the fleet's tables only:\n%s", out)
	}
	if code := ta.run("sessions", "list"); code != 0 { // creates the schema
		t.Fatalf("sessions list: %s", ta.stderr)
	}
	ta.stdout.Reset()
	ta.run("doctor", "--offline")
	if out := ta.stdout.String(); !strings.Contains(out, fmt.Sprintf("✓ database schema: version %d (current), schema %s, ", postgres.SchemaVersion(), schema)) ||
		strings.Contains(out, "state.db") {
		t.Fatalf("doctor after the first run:\n%s", out)
	}
}

func TestDoctorPostgresUnreachable(t *testing.T) {
	ta := newTestApp(t, map[string]string{"HERMES_DATABASE_URL": "postgres://u:hunter2-secret@127.0.0.1:1/db?connect_timeout=5"}, "", false)
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte("database:\n  backend: postgres\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("doctor", "--offline"); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	out := ta.stdout.String()
	if !strings.Contains(out, "✗ database: cannot reach the PostgreSQL server at 127.0.0.1:1 (from HERMES_DATABASE_URL)") ||
		strings.Contains(out, "hunter2-secret") {
		t.Fatalf("doctor:\n%s", out)
	}
}
