package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/pairing"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// With database.backend: postgres the pairing state lives in the
// database: a code a gateway replica handed out is approved with
// `hermes pairing approve` on another machine (HERMES_HOME), and no
// pairing/ files are written.
func TestPairingLivesInPostgres(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pcode, err := pairing.NewWith(db.Pairing(), nil).Request("telegram", "4242", "Ada")
	if err != nil || pcode == "" {
		t.Fatalf("Request = %q, %v", pcode, err)
	}
	ta := newTestApp(t, map[string]string{"HERMES_DATABASE_URL": url}, "", false)
	cfg := "database:\n  backend: postgres\n  schema: " + schema + "\n"
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("pairing", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "pending") {
		t.Fatalf("list: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if code := ta.run("pairing", "approve", "telegram", pcode); code != 0 {
		t.Fatalf("approve: %d %s", code, ta.stderr)
	}
	if !pairing.NewWith(db.Pairing(), nil).IsApproved("telegram", "4242") {
		t.Fatal("the approval made on another HERMES_HOME is not in the database")
	}
	if _, err := os.Stat(filepath.Join(ta.home, "pairing")); !os.IsNotExist(err) {
		t.Fatalf("pairing/ written with database.backend postgres: %v", err)
	}
}
