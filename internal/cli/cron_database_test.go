package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// With database.backend: postgres the cron jobs live in the database: a
// job added from one HERMES_HOME (one machine) is listed, edited and
// removed from another, and no cron/jobs.json is written.
func TestCronJobsLiveInPostgres(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	var apps [2]*testApp
	for i := range apps {
		apps[i] = newTestApp(t, map[string]string{"HERMES_DATABASE_URL": url}, "", false)
		cfg := "database:\n  backend: postgres\n  schema: " + schema + "\n"
		if err := os.WriteFile(filepath.Join(apps[i].home, "config.yaml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, b := apps[0], apps[1]
	if code := a.run("cron", "add", "every 1h", "check the builds", "--name", "builds"); code != 0 {
		t.Fatalf("add: %d %s", code, a.stderr)
	}
	if code := b.run("cron", "list"); code != 0 || !strings.Contains(b.stdout.String(), "builds") {
		t.Fatalf("the other home's list: %d %s %s", code, b.stdout, b.stderr)
	}
	if code := b.run("cron", "pause", "builds"); code != 0 {
		t.Fatalf("pause: %s", b.stderr)
	}
	a.run("cron", "status")
	if !strings.Contains(a.stdout.String(), "Jobs: 0 active, 1 paused") {
		t.Fatalf("status after the other home paused the job: %s %s", a.stdout, a.stderr)
	}
	if code := a.run("cron", "remove", "builds"); code != 0 {
		t.Fatalf("remove: %s", a.stderr)
	}
	if code := b.run("cron", "remove", "builds"); code != 1 || !strings.Contains(b.stderr.String(), "hermes cron list") {
		t.Fatalf("removing it again from the other home: %d %s", code, b.stderr)
	}
	if _, err := os.Stat(filepath.Join(a.home, "cron", "jobs.json")); !os.IsNotExist(err) {
		t.Fatalf("cron/jobs.json written with database.backend postgres: %v", err)
	}
}
