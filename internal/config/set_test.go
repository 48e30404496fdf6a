package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/testio"
)

func TestSetKeepsCommentsAndOtherKeys(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, `# my hermes config
model:
  default: gpt-4o   # the main model
  provider: openai
terminal:
  # seconds per command
  timeout: 180
  unknown_future_key: keep me
`)
	st0, _ := os.Stat(path)
	// Hold the original open so its inode cannot be freed and reused by the
	// replacement (which would make the atomic-rename check below flaky).
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := Set(home, "terminal.timeout", "300"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "terminal.env_passthrough", "[GOPATH, GOFLAGS]"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "agent.max_turns", "12"); err != nil {
		t.Fatal(err)
	}
	got := testio.ReadFile(t, path)
	for _, want := range []string{"# my hermes config", "default: gpt-4o # the main model", "# seconds per command",
		"timeout: 300", "unknown_future_key: keep me", "[GOPATH, GOFLAGS]", "agent:\n  max_turns: 12"} {
		if !strings.Contains(got, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, got)
		}
	}
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Terminal.Timeout != 300 || l.Config.Agent.MaxTurns != 12 || len(l.Config.Terminal.EnvPassthrough) != 2 {
		t.Errorf("reloaded: %+v %+v", l.Config.Terminal, l.Config.Agent)
	}
	// Atomic replacement: a new inode, no temporary files left behind.
	st1, _ := os.Stat(path)
	if st0.Sys().(*syscall.Stat_t).Ino == st1.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("config.yaml was rewritten in place, not replaced by rename")
	}
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestSetValidates(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	orig := "terminal:\n  timeout: 180\n"
	writeFile(t, path, orig)
	cases := []struct{ key, value, want string }{
		{"terminal.timeout", "abc", `terminal.timeout: expected an integer (e.g. 180), got "abc"`},
		{"terminal.timout", "5", `did you mean "terminal.timeout"?`},
		{"terminal", "5", "is a section; set one of its keys"},
		{"memory.memory_enabled", "perhaps", "expected true or false"},
		{"auxiliary.approval.provider", "auto", "a Hermes setting this build does not use"},
	}
	for _, tc := range cases {
		err := Set(home, tc.key, tc.value)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %s) = %v, want error containing %q", tc.key, tc.value, err, tc.want)
		}
	}
	if got := testio.ReadFile(t, path); got != orig {
		t.Errorf("failed Set changed the file:\n%s", got)
	}
	// A string key takes text as typed, even text that looks like YAML.
	if err := Set(home, "agent.system_prompt", "Note: be terse"); err != nil {
		t.Fatal(err)
	}
	l, err := Load(home, LoadOptions{})
	if err != nil || l.Config.Agent.SystemPrompt != "Note: be terse" {
		t.Errorf("system_prompt = %q, %v", l.Config.Agent.SystemPrompt, err)
	}
}

func TestSetRefusesBrokenConfig(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	orig := "model: [unclosed\n"
	writeFile(t, path, orig)
	err := Set(home, "terminal.timeout", "5")
	var ce *Error
	if !errors.As(err, &ce) || ce.Line == 0 || !strings.Contains(ce.Msg, "fix it") {
		t.Errorf("Set on broken file = %v", err)
	}
	if testio.ReadFile(t, path) != orig {
		t.Errorf("broken config.yaml was modified")
	}
}

func TestSetSecretsGoToDotEnv(t *testing.T) {
	home := t.TempDir()
	envPath := filepath.Join(home, ".env")
	writeFile(t, envPath, "# keys\nOPENAI_API_KEY=old\nexport OTHER=1 # note\n")
	if err := os.Chmod(envPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "OPENAI_API_KEY", "sk-new-secret-abcd"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "ANTHROPIC_API_KEY", "sk ant with 'quote' and $dollar"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "model.api_key", "sk-custom-1234"); err != nil {
		t.Fatal(err)
	}
	env := testio.ReadFile(t, envPath)
	for _, want := range []string{"# keys\n", "OPENAI_API_KEY=sk-new-secret-abcd\n", "export OTHER=1 # note\n", "MODEL_API_KEY=sk-custom-1234\n"} {
		if !strings.Contains(env, want) {
			t.Errorf(".env lacks %q:\n%s", want, env)
		}
	}
	if strings.Count(env, "OPENAI_API_KEY") != 1 {
		t.Errorf("duplicate entries:\n%s", env)
	}
	st, _ := os.Stat(envPath)
	if st.Mode().Perm() != 0o600 {
		t.Errorf(".env mode = %v, want 0600", st.Mode().Perm())
	}
	cfg := testio.ReadFile(t, filepath.Join(home, "config.yaml"))
	if strings.Contains(cfg, "sk-custom") || !strings.Contains(cfg, "${MODEL_API_KEY}") {
		t.Errorf("secret leaked into config.yaml:\n%s", cfg)
	}
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Getenv("ANTHROPIC_API_KEY") != "sk ant with 'quote' and $dollar" {
		t.Errorf("round trip = %q", l.Getenv("ANTHROPIC_API_KEY"))
	}
	if l.Config.Model.APIKey != "sk-custom-1234" {
		t.Errorf("model.api_key = %q", l.Config.Model.APIKey)
	}
	if m := l.Masked(); m.Model.APIKey != "****1234" {
		t.Errorf("masked = %q", m.Model.APIKey)
	}
	// Unset removes the reference and the .env entry written for it.
	if err := Unset(home, "model.api_key"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(testio.ReadFile(t, envPath), "MODEL_API_KEY") || strings.Contains(testio.ReadFile(t, filepath.Join(home, "config.yaml")), "api_key") {
		t.Errorf("unset left the secret behind")
	}
	if err := Unset(home, "OPENAI_API_KEY"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(testio.ReadFile(t, envPath), "OPENAI_API_KEY") {
		t.Errorf("unset OPENAI_API_KEY failed")
	}
}

func TestSetModelShorthand(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, "model: my-model # chosen\n")
	if err := Set(home, "model.default", "other-model"); err != nil {
		t.Fatal(err)
	}
	if got := testio.ReadFile(t, path); !strings.Contains(got, "model: other-model # chosen") {
		t.Errorf("shorthand not kept:\n%s", got)
	}
	if err := Set(home, "model.provider", "openrouter"); err != nil {
		t.Fatal(err)
	}
	l, err := Load(home, LoadOptions{})
	if err != nil || l.Config.Model.Default != "other-model" || l.Config.Model.Provider != "openrouter" {
		t.Errorf("after provider set: %+v %v\n%s", l.Config.Model, err, testio.ReadFile(t, path))
	}
	writeFile(t, path, "model:\n  model: aliased\n")
	if err := Set(home, "model.default", "new"); err != nil {
		t.Fatal(err)
	}
	if got := testio.ReadFile(t, path); got != "model:\n  model: new\n" {
		t.Errorf("alias key not updated in place:\n%s", got)
	}
}

func TestUnset(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, "# top\nagent:\n  max_turns: 5\nterminal:\n  timeout: 9\n  backend: box\n")
	if err := Unset(home, "agent.max_turns"); err != nil {
		t.Fatal(err)
	}
	if err := Unset(home, "terminal.timeout"); err != nil {
		t.Fatal(err)
	}
	if err := Unset(home, "terminal.cwd"); err != nil {
		t.Fatalf("unset of a key that is not set: %v", err)
	}
	if got := testio.ReadFile(t, path); got != "# top\nterminal:\n  backend: box\n" {
		t.Errorf("after unset:\n%s", got)
	}
	if err := Unset(home, "terminal.bakend"); err == nil || !strings.Contains(err.Error(), "terminal.backend") {
		t.Errorf("unset unknown = %v", err)
	}
}

func TestSetNewHomeCreatesFiles(t *testing.T) {
	home := filepath.Join(t.TempDir(), "fresh")
	if err := Set(home, "model.provider", "anthropic"); err != nil {
		t.Fatal(err)
	}
	if got := testio.ReadFile(t, filepath.Join(home, "config.yaml")); got != "model:\n  provider: anthropic\n" {
		t.Errorf("new config.yaml:\n%s", got)
	}
}

func TestIsSecretKeyAndMask(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HF_TOKEN", "SUDO_PASSWORD", "MODAL_TOKEN_SECRET", "FAL_KEY", "model.api_key"} {
		if !IsSecretKey(k) {
			t.Errorf("%s should be secret", k)
		}
	}
	for _, k := range []string{"OPENAI_BASE_URL", "model.default", "TERMINAL_ENV", "terminal.timeout"} {
		if IsSecretKey(k) {
			t.Errorf("%s should not be secret", k)
		}
	}
	if MaskSecret("sk-or-v1-0123456789abcd") != "****abcd" || MaskSecret("short") != "****" {
		t.Errorf("mask: %q %q", MaskSecret("sk-or-v1-0123456789abcd"), MaskSecret("short"))
	}
}

func TestSetConcurrentWritersKeepEveryKey(t *testing.T) {
	home := t.TempDir()
	keys := []string{"terminal.timeout", "agent.max_turns", "terminal.box_pids", "memory.memory_char_limit",
		"memory.user_char_limit", "compression.protect_last_n", "approvals.timeout", "terminal.lifetime_seconds"}
	errs := make(chan error, len(keys))
	for i, k := range keys {
		go func() { errs <- Set(home, k, strconv.Itoa(i+1)) }()
	}
	for range keys {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if v, _ := Get(l, k); v != i+1 {
			t.Errorf("%s = %v, want %d (a concurrent write was lost)", k, v, i+1)
		}
	}
}

// New-user trial: unset takes sections too, so an unknown name says
// "unknown key or section"; set, which takes keys only, says "unknown key".
func TestUnsetUnknownSaysKeyOrSection(t *testing.T) {
	home := t.TempDir()
	if err := Unset(home, "nosuchsection"); err == nil || !strings.Contains(err.Error(), "nosuchsection: unknown key or section") {
		t.Errorf("unset nosuchsection: %v", err)
	}
	if err := Set(home, "nosuchsection.x", "1"); err == nil || strings.Contains(err.Error(), "or section") {
		t.Errorf("set of an unknown key: %v", err)
	}
}
