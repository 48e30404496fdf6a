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

func TestEgressAllowWithPortsAndListShowsPorts(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("egress", "allow", "127.0.0.1:8080", "API.example.com:443", "[::1]:8080", "10.0.0.0/8:5432", "fd00::/8:5432", "pypi.org"); code != 0 {
		t.Fatalf("allow: %d %s", code, ta.stderr)
	}
	l, err := config.Load(ta.home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "127.0.0.1:8080 api.example.com:443 [::1]:8080 10.0.0.0/8:5432 [fd00::/8]:5432 pypi.org"
	if got := strings.Join(l.Config.Terminal.BoxNetwork.Allow, " "); got != want {
		t.Fatalf("allow list %q, want %q", got, want)
	}
	if code := ta.run("egress", "allow", "--remove", "[::1]:8080"); code != 0 {
		t.Fatalf("remove an entry with a port: %d %s", code, ta.stderr)
	}
	if code := ta.run("egress", "list"); code != 0 {
		t.Fatalf("list: %d %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	for _, line := range []string{"127.0.0.1:8080  port 8080 only", "api.example.com:443  port 443 only", "pypi.org  all ports", "10.0.0.0/8:5432  port 5432 only"} {
		if !strings.Contains(strings.Join(strings.Fields(out), "  "), strings.Join(strings.Fields(line), "  ")) {
			t.Errorf("list lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "[::1]:8080") {
		t.Errorf("removed entry still listed:\n%s", out)
	}
	before, _ := os.ReadFile(filepath.Join(ta.home, "config.yaml"))
	for _, bad := range []string{"api.example.com:99999", "::1]:80", "[::1]x"} {
		if code := ta.run("egress", "allow", bad); code == 0 || !strings.Contains(ta.stderr.String(), bad) {
			t.Errorf("bad entry %q: %d %s", bad, code, ta.stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(ta.home, "config.yaml")); string(after) != string(before) {
		t.Error("a rejected entry changed config.yaml")
	}
	if code := ta.run("egress", "allow", "--help"); code != 0 || !strings.Contains(ta.stdout.String(), "[::1]:8080") || !strings.Contains(ta.stdout.String(), ":PORT") {
		t.Errorf("allow --help does not document ports:\n%s", ta.stdout)
	}
}

func TestEgressCAFileKeyIsSettableAndDocumented(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	caPath := filepath.Join(ta.home, "private-ca.pem")
	if code := ta.run("config", "set", "terminal.box_network.ca_file", caPath); code != 0 {
		t.Fatalf("config set ca_file: %d %s", code, ta.stderr)
	}
	l, err := config.Load(ta.home, config.LoadOptions{})
	if err != nil || l.Config.Terminal.BoxNetwork.CAFile != caPath {
		t.Fatalf("ca_file loaded as %q (%v)", l.Config.Terminal.BoxNetwork.CAFile, err)
	}
	if code := ta.run("config", "set", "terminal.box_network.ca_fil", caPath); code == 0 || !strings.Contains(ta.stderr.String(), "ca_file") {
		t.Errorf("a misspelt key must be refused with a suggestion: %d %s", code, ta.stderr)
	}
	if code := ta.run("egress", "list"); code != 0 || !strings.Contains(ta.stdout.String(), caPath) {
		t.Errorf("list does not show the CA file: %d %s", code, ta.stdout)
	}
	if code := ta.run("egress", "--help"); code != 0 || !strings.Contains(ta.stdout.String(), "terminal.box_network.ca_file") {
		t.Errorf("egress --help does not document ca_file:\n%s", ta.stdout)
	}
}

func TestEgressStatusSurvivesLongLinesAndEscapesControlCharacters(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	path := egress.AuditPath(ta.home)
	os.MkdirAll(filepath.Dir(path), 0o700)
	var content []byte
	good, _ := json.Marshal(egress.AuditRecord{Box: "task-1", Proto: "http", Method: "GET", Host: "ok.test", Port: 80, Decision: "allow", Reason: "allowed by ok.test"})
	content = append(append(content, good...), '\n')
	long, _ := json.Marshal(egress.AuditRecord{Box: "task-1", Host: "x.test", Path: "/" + strings.Repeat("a", 2<<20), Decision: "deny"})
	content = append(append(content, long...), '\n')
	forged, _ := json.Marshal(egress.AuditRecord{Box: "task-1\x1b]0;owned\x07", Proto: "http", Method: "GET\t", Host: "evil.test", Port: 80,
		Path: "/\x1b[2J\x1b[1;1H\nTIME  BOX  allow\u202e", Decision: "deny", Reason: "x\r\x1b[31m"})
	content = append(append(content, forged...), '\n')
	os.WriteFile(path, content, 0o600)
	if code := ta.run("egress", "status"); code != 0 {
		t.Fatalf("status on a log with a 2 MiB line: %d %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	if strings.ContainsAny(out, "\x1b\x07\r\u202e") {
		t.Fatalf("status printed raw control characters:\n%q", out)
	}
	for _, want := range []string{"skipped 1 oversized", "ok.test:80", `evil.test:80/\x1b[2J\x1b[1;1H\nTIME  BOX  allow\u202e`, `task-1\x1b]0;owned\a`} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
