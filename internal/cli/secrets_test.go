package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/egress"
)

func TestSecretsSetListRm(t *testing.T) {
	ta := newTestApp(t, nil, "ghp_supersecretvalue\n", false)
	if code := ta.run("secrets", "set", "GH_TOKEN", "--hosts", "api.github.com,*.githubusercontent.com"); code != 0 {
		t.Fatalf("set: %d %s", code, ta.stderr)
	}
	if strings.Contains(ta.stdout.String()+ta.stderr.String(), "supersecret") {
		t.Fatalf("set printed the value: %s %s", ta.stdout, ta.stderr)
	}
	path := filepath.Join(ta.home, "secrets", "secrets.json")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("store %v mode %v", err, st)
	}
	got, _ := egress.LoadSecrets(ta.home)
	if len(got) != 1 || got[0].Value != "ghp_supersecretvalue" {
		t.Fatalf("stored %#v (one trailing newline must be trimmed)", got)
	}
	if code := ta.run("secrets", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "GH_TOKEN") ||
		!strings.Contains(ta.stdout.String(), "api.github.com,*.githubusercontent.com") || strings.Contains(ta.stdout.String(), "supersecret") {
		t.Fatalf("list: %d %q", code, ta.stdout)
	}
	if code := ta.run("secrets", "rm", "GH_TOKEN"); code != 0 {
		t.Fatalf("rm: %d %s", code, ta.stderr)
	}
	if code := ta.run("secrets", "rm", "GH_TOKEN"); code == 0 || !strings.Contains(ta.stderr.String(), "GH_TOKEN") {
		t.Fatalf("rm of a missing secret: %d %s", code, ta.stderr)
	}
}

func TestSecretsSetRejectsBadInputAndKeepsTheStore(t *testing.T) {
	ta := newTestApp(t, nil, "v1", false)
	if code := ta.run("secrets", "set", "KEEP", "--hosts", "a.test"); code != 0 {
		t.Fatal(ta.stderr)
	}
	for _, args := range [][]string{
		{"secrets", "set", "9BAD", "--hosts", "a.test"},
		{"secrets", "set", "NOHOSTS"},
		{"secrets", "set", "IPHOST", "--hosts", "10.0.0.1"},
		{"secrets", "set", "PORTHOST", "--hosts", "api.example.com:443"},
	} {
		if code := ta.run(args...); code == 0 || strings.Count(strings.TrimSpace(ta.stderr.String()), "\n") != 0 {
			t.Errorf("%v: code %d stderr %q, want one error line", args, code, ta.stderr)
		}
	}
	empty := newTestApp(t, nil, "\n", false)
	if code := empty.run("secrets", "set", "EMPTY", "--hosts", "a.test"); code == 0 || !strings.Contains(empty.stderr.String(), "empty value") {
		t.Errorf("empty value: %d %q", code, empty.stderr)
	}
	if got, _ := egress.LoadSecrets(ta.home); len(got) != 1 || got[0].Name != "KEEP" {
		t.Fatalf("store changed by bad input: %#v", got)
	}
}
