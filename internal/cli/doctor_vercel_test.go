package cli

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/doctor"
)

func fakeOIDC(exp time.Time) string {
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"exp":%d,"owner_id":"team_1","project_id":"prj_1"}`, exp.Unix()))) + ".c2ln"
}

// TestVercelAuthNamesModeAndExpiry: the auth check names the active mode
// and an OIDC token's expiry; an expired token fails with the fix.
func TestVercelAuthNamesModeAndExpiry(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	r := vercelAuth(env(map[string]string{"VERCEL_OIDC_TOKEN": fakeOIDC(now.Add(3 * time.Hour)), "VERCEL_TOKEN": "t"}), now)
	if r.Status != doctor.OK || !strings.Contains(r.Detail, "OIDC") || !strings.Contains(r.Detail, "2026-12-05T15:00:00Z") || !strings.Contains(r.Detail, "3h0m") {
		t.Errorf("oidc: %+v", r)
	}
	r = vercelAuth(env(map[string]string{"VERCEL_OIDC_TOKEN": fakeOIDC(now.Add(-time.Minute))}), now)
	if r.Status != doctor.Fail || !strings.Contains(r.Detail, "expired") || !strings.Contains(r.Fix, "vercel env pull") {
		t.Errorf("expired: %+v", r)
	}
	r = vercelAuth(env(map[string]string{"VERCEL_TOKEN": "t", "VERCEL_PROJECT_ID": "prj_9"}), now)
	if r.Status != doctor.Fail || !strings.Contains(r.Detail, "access token") || !strings.Contains(r.Detail, "VERCEL_TEAM_ID") {
		t.Errorf("token without team: %+v", r)
	}
	r = vercelAuth(env(map[string]string{"VERCEL_TOKEN": "t", "VERCEL_PROJECT_ID": "prj_9", "VERCEL_TEAM_ID": "team_9"}), now)
	if r.Status != doctor.OK || !strings.Contains(r.Detail, "access token (VERCEL_TOKEN) for project prj_9, team team_9") {
		t.Errorf("token: %+v", r)
	}
	if r := vercelAuth(env(nil), now); r.Status != doctor.Fail {
		t.Errorf("none: %+v", r)
	}
}

// TestSetupTerminalReadsVercelLink: in a directory linked with `vercel
// link`, the wizard offers the project and team ids of the nearest
// .vercel/project.json; Enter saves them to .env.
func TestSetupTerminalReadsVercelLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".vercel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".vercel", "project.json"), []byte(`{"projectId":"prj_linked1","orgId":"team_linked2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "web")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	// backend, runtime (Enter), memory, cpu (Enter), project id (Enter), team id (Enter).
	ta := newTestApp(t, nil, "vercel_sandbox\n\n4096\n\n\n\n", true)
	if code := ta.run("setup", "terminal"); code != 0 {
		t.Fatalf("%d %s\n%s", code, ta.stderr, ta.stdout)
	}
	if !strings.Contains(ta.stdout.String(), "[prj_linked1]") || !strings.Contains(ta.stdout.String(), "[team_linked2]") {
		t.Errorf("the link's ids were not offered:\n%s", ta.stdout)
	}
	l := loadTestConfig(t, ta)
	if l.DotEnv["VERCEL_PROJECT_ID"] != "prj_linked1" || l.DotEnv["VERCEL_TEAM_ID"] != "team_linked2" {
		t.Errorf(".env = %v", l.DotEnv)
	}
}
