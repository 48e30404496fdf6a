package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFallbackAddAndConfigCheckRefuseSkippedEntries: an entry a run would
// skip (an unknown provider; a preset provider at another base_url without
// --key-env, whose key is never sent there) is refused by `fallback add`
// and flagged by `config check`, each with its fix.
func TestFallbackAddAndConfigCheckRefuseSkippedEntries(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"nosuchprov", "foo"}, []string{`unknown fallback provider "nosuchprov"`, "openrouter", "custom"}},
		{[]string{"openai", "gpt-x", "--base-url", "http://127.0.0.1:5077/v1"}, []string{"http://127.0.0.1:5077/v1", "--key-env"}},
	} {
		if code := ta.run(append([]string{"fallback", "add"}, c.args...)...); code == 0 {
			t.Fatalf("fallback add %q accepted: %s", c.args, ta.stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(ta.stderr.String(), w) {
				t.Errorf("fallback add %q: stderr %q lacks %q", c.args, ta.stderr, w)
			}
		}
	}
	if code := ta.run("fallback", "add", "openai", "gpt-x", "--base-url", "http://127.0.0.1:5077/v1", "--key-env", "LOCAL_KEY"); code != 0 {
		t.Fatalf("with --key-env: %d %s", code, ta.stderr)
	}
	cfg := "model:\n  provider: custom\n  base_url: http://127.0.0.1:5077/v1\n  default: m\nfallback_providers:\n" +
		"  - provider: nosuchprov\n    model: foo\n  - provider: openai\n    model: gpt-x\n    base_url: http://127.0.0.1:5077/v1\n"
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("config", "check"); code == 0 {
		t.Fatalf("config check passed: %s", ta.stdout)
	}
	out := ta.stdout.String()
	if !strings.Contains(out, `fallback_providers[0].provider: unknown fallback provider "nosuchprov"`) ||
		!strings.Contains(out, "fallback_providers[1].key_env") {
		t.Fatalf("config check output:\n%s", out)
	}
}
