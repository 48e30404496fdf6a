package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigWritesBlockStyle: `fallback clear` on a config.yaml holding
// only the chain left "{}", and later `config set`s grew it as one flow
// line ({terminal: {backend: box}, ...}), so config check's line numbers
// meant nothing. Edits write block style and never "{}".
func TestConfigWritesBlockStyle(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	path := filepath.Join(ta.home, "config.yaml")
	if code := ta.run("fallback", "add", "anthropic", "claude-sonnet-4"); code != 0 {
		t.Fatalf("add: %d %s", code, ta.stderr)
	}
	if code := ta.run("fallback", "clear"); code != 0 {
		t.Fatalf("clear: %d %s", code, ta.stderr)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "{") {
		t.Fatalf("after clear: %q", b)
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil { // as older builds left it
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"terminal.backend", "box"}, {"model.default", "m"}, {"toolsets", "[web, terminal]"}} {
		if code := ta.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("config set %s: %d %s", kv[0], code, ta.stderr)
		}
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"terminal:\n  backend: box\n", "model:\n  default: m\n"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("config.yaml lacks %q:\n%s", want, b)
		}
	}
	if strings.HasPrefix(string(b), "{") {
		t.Fatalf("flow style:\n%s", b)
	}
}

// TestConfigShowsAuxTimeoutDefaults: the README says a title call waits at
// most 30 s by default; config get and show printed 0.
func TestConfigShowsAuxTimeoutDefaults(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	for key, want := range map[string]string{"auxiliary.title_generation.timeout": "30", "auxiliary.title.timeout": "30",
		"auxiliary.compression.timeout": "120", "auxiliary.vision.timeout": "120"} {
		if code := ta.run("config", "get", key); code != 0 || strings.TrimSpace(ta.stdout.String()) != want {
			t.Errorf("config get %s: %d %q %s, want %s", key, code, ta.stdout, ta.stderr, want)
		}
	}
	if code := ta.run("config", "show"); code != 0 || !strings.Contains(ta.stdout.String(), "timeout: 30") {
		t.Fatalf("config show: %d\n%s", code, ta.stdout)
	}
}
