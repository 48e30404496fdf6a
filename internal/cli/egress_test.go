package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
)

func TestEgressAllowDenyEditConfigAndKeepOtherKeys(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	cfgPath := filepath.Join(ta.home, "config.yaml")
	os.WriteFile(cfgPath, []byte("# my settings\nterminal:\n  backend: box # the sandbox\n"), 0o600)
	if code := ta.run("egress", "allow", "pypi.org", "*.PythonHosted.org", "10.1.0.0/16"); code != 0 {
		t.Fatalf("allow: %d %s", code, ta.stderr)
	}
	if code := ta.run("egress", "deny", "evil.pypi.org", "pypi.org"); code != 0 || !strings.Contains(ta.stdout.String(), "removed from terminal.box_network.allow: pypi.org") {
		t.Fatalf("deny: %d %s %s", code, ta.stdout, ta.stderr)
	}
	l, err := config.Load(ta.home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nw := l.Config.Terminal.BoxNetwork
	if strings.Join(nw.Allow, " ") != "*.pythonhosted.org 10.1.0.0/16" || strings.Join(nw.Deny, " ") != "evil.pypi.org pypi.org" {
		t.Fatalf("config now allow=%v deny=%v", nw.Allow, nw.Deny)
	}
	raw, _ := os.ReadFile(cfgPath)
	if !strings.Contains(string(raw), "# my settings") || !strings.Contains(string(raw), "backend: box") {
		t.Fatalf("other keys or comments lost:\n%s", raw)
	}
	if code := ta.run("egress", "deny", "--remove", "pypi.org"); code != 0 {
		t.Fatalf("deny --remove: %d %s", code, ta.stderr)
	}
	if code := ta.run("egress", "allow", "--remove", "nothere.test"); code == 0 || !strings.Contains(ta.stderr.String(), "nothere.test") {
		t.Fatalf("removing a missing entry: %d %s", code, ta.stderr)
	}
	before, _ := os.ReadFile(cfgPath)
	if code := ta.run("egress", "allow", "ok.test", "https://bad.test/x"); code == 0 || !strings.Contains(ta.stderr.String(), "https://bad.test/x") {
		t.Fatalf("bad entry: %d %s", code, ta.stderr)
	}
	if after, _ := os.ReadFile(cfgPath); string(after) != string(before) {
		t.Fatalf("a rejected command changed config.yaml")
	}
	if code := ta.run("egress", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "*.pythonhosted.org") || !strings.Contains(ta.stdout.String(), "evil.pypi.org") {
		t.Fatalf("list: %d %s", code, ta.stdout)
	}
}

func TestEgressStatusShowsSecretHostsAndRecentDecisions(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if err := egress.SetSecret(ta.home, egress.Secret{Name: "OPENAI_API_KEY", Value: "sk-never-shown", Hosts: []string{"api.openai.com"}}); err != nil {
		t.Fatal(err)
	}
	path := egress.AuditPath(ta.home)
	os.MkdirAll(filepath.Dir(path), 0o700)
	f, _ := os.Create(path)
	for i, host := range []string{"old.test", "pypi.org", "evil.test"} {
		line, _ := json.Marshal(egress.AuditRecord{Time: time.Date(2026, 11, 30, 12, i, 0, 0, time.UTC), Box: "task-7",
			Proto: "connect", Method: "CONNECT", Host: host, Port: 443, Decision: "deny", Reason: host + " is not in the allowlist"})
		f.Write(append(line, '\n'))
	}
	f.Close()
	if code := ta.run("egress", "status", "-n", "2"); code != 0 {
		t.Fatalf("status: %d %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	for _, want := range []string{"api.openai.com (OPENAI_API_KEY", path, "evil.test:443", "pypi.org:443", "task-7", "deny"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "old.test") || strings.Contains(out, "sk-never-shown") {
		t.Errorf("status shows more than the last 2 decisions or a secret:\n%s", out)
	}
}
