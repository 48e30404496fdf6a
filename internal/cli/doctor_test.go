package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On a clean HERMES_HOME (local backend, a key for the chosen provider)
// doctor --offline finds nothing wrong and exits 0.
func TestDoctorCleanHome(t *testing.T) {
	ta := newTestApp(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test"}, "", false)
	if code := ta.run("model", "--provider", "openrouter", "--model", "anthropic/claude-sonnet-4"); code != 0 {
		t.Fatalf("model: %s", ta.stderr)
	}
	if code := ta.run("doctor", "--offline"); code != 0 {
		t.Fatalf("want exit 0 on a clean home, got %d\n%s", code, ta.stdout)
	}
	if strings.Contains(ta.stdout.String(), "✗") || !strings.Contains(ta.stdout.String(), "✓ config") {
		t.Errorf("output:\n%s", ta.stdout)
	}
}

// A config value of the wrong type is ✗ naming the file and key; exit 1.
func TestDoctorBrokenConfig(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	path := filepath.Join(ta.home, "config.yaml")
	if err := os.WriteFile(path, []byte("terminal:\n  timeout: soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("doctor", "--offline"); code != 1 {
		t.Fatalf("want exit 1, got %d\n%s", code, ta.stdout)
	}
	out := ta.stdout.String()
	if !strings.Contains(out, "✗ config: "+path) || !strings.Contains(out, "terminal.timeout") {
		t.Errorf("want ✗ naming %s and terminal.timeout:\n%s", path, out)
	}
}

// .env readable by others is ✗; --fix makes it 0600 and the run passes.
func TestDoctorFixesDotEnvMode(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	env := filepath.Join(ta.home, ".env")
	if code := ta.run("config", "set", "model.default", "anthropic/claude-sonnet-4"); code != 0 {
		t.Fatal(ta.stderr)
	}
	if err := os.WriteFile(env, []byte("OPENROUTER_API_KEY=sk-or-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(env, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("doctor", "--offline"); code != 1 || !strings.Contains(ta.stdout.String(), "chmod 0600 "+env) {
		t.Fatalf("want exit 1 with the chmod fix, got %d\n%s", code, ta.stdout)
	}
	if code := ta.run("doctor", "--offline", "--fix"); code != 0 {
		t.Fatalf("--fix: want exit 0, got %d\n%s", code, ta.stdout)
	}
	st, err := os.Stat(env)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf(".env mode after --fix: %v %v", st.Mode(), err)
	}
	if !strings.Contains(ta.stdout.String(), "(fixed)") {
		t.Errorf("--fix must say what it repaired:\n%s", ta.stdout)
	}
}

// A box backend on a cgroupfs without a controller is ✗ with the fix.
func TestDoctorMissingCgroupController(t *testing.T) {
	ta := newTestApp(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test"}, "", false)
	if code := ta.run("config", "set", "terminal.backend", "box"); code != 0 {
		t.Fatal(ta.stderr)
	}
	cg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.controllers"), []byte("cpu io memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("doctor", "--offline", "--cgroup-root", cg); code != 1 {
		t.Fatalf("want exit 1, got %d\n%s", code, ta.stdout)
	}
	out := ta.stdout.String()
	if !strings.Contains(out, "✗ cgroup controllers") || !strings.Contains(out, "lacks pids") || !strings.Contains(out, "fix: enable them") {
		t.Errorf("output:\n%s", out)
	}
}

// `hermes version` prints exactly what `hermes --version` prints.
func TestVersionCommandEqualsFlag(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	ta.Executable = "/usr/local/bin/hermes"
	if code := ta.run("--version"); code != 0 {
		t.Fatal(ta.stderr)
	}
	flag := ta.stdout.String()
	if code := ta.run("version"); code != 0 {
		t.Fatal(ta.stderr)
	}
	if ta.stdout.String() != flag || !strings.HasPrefix(flag, "Hermes Agent v") {
		t.Errorf("version = %q, --version = %q", ta.stdout.String(), flag)
	}
}

// A hosted backend without its credentials is ✗ naming the keys to set;
// with them in .env it is ✓.
func TestDoctorHostedBackendCredentials(t *testing.T) {
	ta := newTestApp(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test"}, "", false)
	if code := ta.run("setup", "terminal", "--non-interactive", "--backend", "vercel_sandbox", "--cpu", "1", "--memory", "2048"); code != 0 {
		t.Fatal(ta.stderr)
	}
	if code := ta.run("doctor", "--offline"); code != 1 || !strings.Contains(ta.stdout.String(), "✗ vercel auth: no credentials") || !strings.Contains(ta.stdout.String(), "✓ vercel runtime: node24") ||
		!strings.Contains(ta.stdout.String(), "VERCEL_OIDC_TOKEN") {
		t.Fatalf("want exit 1 naming VERCEL_OIDC_TOKEN, got %d\n%s", code, ta.stdout)
	}
	if code := ta.run("config", "set", "VERCEL_OIDC_TOKEN", fakeOIDC(ta.Now().Add(2*time.Hour))); code != 0 {
		t.Fatal(ta.stderr)
	}
	ta.run("doctor", "--offline")
	if !strings.Contains(ta.stdout.String(), "✓ vercel auth: OIDC token (VERCEL_OIDC_TOKEN, development only), expires 2026-11-30T16:55:00Z (in 2h0m0s)") {
		t.Errorf("with the token in .env:\n%s", ta.stdout)
	}
}
