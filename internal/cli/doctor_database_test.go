package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// With database.backend: postgres, doctor reports the server's version and
// the schema's (not created yet, then current after a run creates it);
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
		!strings.Contains(out, "✓ database schema: not created yet") {
		t.Fatalf("doctor before the first run:\n%s", out)
	}
	if code := ta.run("sessions", "list"); code != 0 { // creates the schema
		t.Fatalf("sessions list: %s", ta.stderr)
	}
	ta.stdout.Reset()
	ta.run("doctor", "--offline")
	if out := ta.stdout.String(); !strings.Contains(out, "✓ database schema: version 1 (current)") {
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
