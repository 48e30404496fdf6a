package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// `sessions migrate --to postgres` copies state.db into the database;
// with database.backend: postgres the sessions commands read it there; a
// second run copies nothing.
func TestSessionsMigrateToPostgres(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	e := newSessionsEnv(t)
	e.env = map[string]string{"HERMES_DATABASE_URL": url}
	cfg := "database:\n  schema: " + schema + "\n"
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := e.run(t, "", false, "sessions", "migrate", "--to", "postgres")
	if code != 0 || !strings.Contains(out, "Copied 2 sessions (0 were already there); checked 2 sessions, 5 messages") ||
		!strings.Contains(out, "hermes config set database.backend postgres") {
		t.Fatalf("migrate: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, _ = e.run(t, "", false, "sessions", "migrate", "--to", "postgres"); code != 0 || !strings.Contains(out, "Copied 0 sessions (2 were already there)") {
		t.Fatalf("second migrate: exit %d\n%s", code, out)
	}
	cfg = "database:\n  backend: postgres\n  schema: " + schema + "\n"
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// state.db goes away: what the commands show now comes from PostgreSQL.
	if err := os.Rename(filepath.Join(e.home, "state.db"), filepath.Join(e.home, "state.db.bak")); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = e.run(t, "", false, "sessions", "show", "Disk full")
	if code != 0 || !strings.Contains(out, "Old journald logs fill /var/log.") {
		t.Fatalf("show from postgres: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = e.run(t, "", false, "sessions", "search", "journald")
	if code != 0 || !strings.Contains(out, e.a.ID) {
		t.Fatalf("search from postgres: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.home, "state.db")); err == nil {
		t.Error("a state.db was created while the backend is postgres")
	}
}

// With database.backend: postgres and the server down, a command fails
// naming the host and HERMES_DATABASE_URL, never the password, and does
// not fall back to state.db.
func TestPostgresUnreachableNamesHostAndVariable(t *testing.T) {
	e := newSessionsEnv(t)
	e.env = map[string]string{"HERMES_DATABASE_URL": "postgres://hermes:hunter2-secret@127.0.0.1:1/hermes?connect_timeout=5"}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("database:\n  backend: postgres\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := e.run(t, "", false, "sessions", "list")
	if code == 0 || !strings.Contains(stderr, "127.0.0.1:1") || !strings.Contains(stderr, "HERMES_DATABASE_URL") ||
		strings.Contains(stderr+out, "hunter2-secret") || strings.Contains(out, e.a.ID) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
}
