package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/testio"
)

// Set refuses a value outside a key's allowed set, names the key, the
// value and the allowed ones, suggests the closest, and saves nothing.
func TestSetValidatesEnumeratedValues(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	original := "# mine\nterminal:\n  backend: local\n"
	writeFile(t, path, original)
	for _, tc := range []struct{ key, value, want, mean string }{
		{"terminal.backend", "modal", "local, box, ssh, docker, vercel_sandbox", ""},
		{"approvals.mode", "of", "manual, smart, off", "off"},
		{"approvals.mode", "yolo", "manual, smart, off", ""},
		{"terminal.box_workspace", "overlayfs", "bind, overlay", "overlay"},
		{"terminal.local_sandbox", "workspace", "workspace-write, read-only, off", "workspace-write"},
		{"terminal.local_sandbox", "readonly", "workspace-write, read-only, off", "read-only"},
		{"model.provider", "openruter", "openrouter, anthropic, openai, ai-gateway, nous", "openrouter"},
		{"model.provider", "OpenAI", "openrouter", "openai"},
		{"model.api_mode", "chat", "chat_completions, anthropic_messages", ""},
		{"agent.reasoning_effort", "hihg", "high", "high"},
	} {
		err := Set(home, tc.key, tc.value)
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s=%s: want an *Error for the key, got %v", tc.key, tc.value, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+tc.value+`"`) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s=%s: message %q lacks the value or %q", tc.key, tc.value, msg, tc.want)
		}
		if tc.mean != "" && !strings.Contains(msg, `did you mean "`+tc.mean+`"`) {
			t.Errorf("%s=%s: message %q lacks did you mean %q", tc.key, tc.value, msg, tc.mean)
		}
	}
	for _, tc := range []struct{ key, value, want string }{
		{"agent.max_turns", "-3", "must not be negative"},
		{"terminal.timeout", "-1", "must not be negative"},
		{"terminal.container_cpu", "-0.5", "must not be negative"},
		{"compression.threshold", "1.5", "between 0 and 1"},
	} {
		if err := Set(home, tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: want %q, got %v", tc.key, tc.value, tc.want, err)
		}
	}
	for name, want := range map[string]string{
		"TERMINAL_ENV":          `TERMINAL_ENV: overrides terminal.backend: "modal" is not one of local, box, ssh, docker, vercel_sandbox`,
		"HERMES_MAX_ITERATIONS": "HERMES_MAX_ITERATIONS: overrides agent.max_turns: must not be negative",
	} {
		value := map[string]string{"TERMINAL_ENV": "modal", "HERMES_MAX_ITERATIONS": "-3"}[name]
		if err := Set(home, name, value); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: want %q, got %v", name, value, want, err)
		}
	}
	if got := testio.ReadFile(t, path); got != original {
		t.Fatalf("a refused value changed config.yaml:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(home, ".env")); err == nil {
		t.Fatal("a refused variable created .env")
	}
	for key, value := range map[string]string{
		"terminal.backend": "box", "approvals.mode": "off", "terminal.box_workspace": "overlay",
		"model.provider": "auto", "model.api_mode": "anthropic_messages", "agent.max_turns": "0",
		"agent.reasoning_effort": "", "compression.threshold": "0.7",
	} {
		if err := Set(home, key, value); err != nil {
			t.Errorf("%s=%s: %v", key, value, err)
		}
	}
	if err := Set(home, "model.provider", "openrouter"); err != nil {
		t.Fatal(err)
	}
}

// An empty secret is refused instead of saved: it would hide the real key
// from the environment and fail later with a confusing 401.
func TestSetRefusesEmptySecret(t *testing.T) {
	home := t.TempDir()
	envPath := filepath.Join(home, ".env")
	writeFile(t, envPath, "OPENROUTER_API_KEY=sk-or-keep\n")
	for _, key := range []string{"OPENROUTER_API_KEY", "ANTHROPIC_AUTH_TOKEN", "model.api_key"} {
		for _, v := range []string{"", "  "} {
			err := Set(home, key, v)
			if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "hermes config unset") {
				t.Errorf("%s=%q: want an empty-value error, got %v", key, v, err)
			}
		}
	}
	if got := testio.ReadFile(t, envPath); got != "OPENROUTER_API_KEY=sk-or-keep\n" {
		t.Errorf(".env changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(home, "config.yaml")); err == nil {
		t.Error("a refused secret created config.yaml")
	}
	// A non-secret variable may still be set to an empty value.
	if err := Set(home, "OPENAI_BASE_URL", ""); err != nil {
		t.Errorf("empty non-secret variable: %v", err)
	}
}

// Unsetting a secret config key removes its .env variable whatever
// config.yaml held, and reports whether anything was removed.
func TestUnsetKeyRemovesSecretAndReports(t *testing.T) {
	home := t.TempDir()
	cfg, envPath := filepath.Join(home, "config.yaml"), filepath.Join(home, ".env")
	writeFile(t, cfg, "model:\n  api_key: sk-literal-in-config\n  default: m\n")
	writeFile(t, envPath, "MODEL_API_KEY=sk-from-env\nOTHER=1\n")
	removed, err := UnsetKey(home, "model.api_key")
	if err != nil || !removed {
		t.Fatalf("UnsetKey = %v, %v", removed, err)
	}
	if got := testio.ReadFile(t, envPath); got != "OTHER=1\n" {
		t.Errorf(".env after unset: %q", got)
	}
	if got := testio.ReadFile(t, cfg); strings.Contains(got, "api_key") {
		t.Errorf("config.yaml after unset:\n%s", got)
	}

	// Only the .env variable left (config.yaml never referenced it).
	writeFile(t, envPath, "MODEL_API_KEY=sk-orphan\n")
	if removed, err := UnsetKey(home, "model.api_key"); err != nil || !removed {
		t.Fatalf("orphan: %v, %v", removed, err)
	}
	if got := testio.ReadFile(t, envPath); strings.Contains(got, "MODEL_API_KEY") {
		t.Errorf("orphan left in .env: %q", got)
	}

	// Nothing set: nothing removed and no file touched or created.
	st0, _ := os.Stat(cfg)
	env0, _ := os.Stat(envPath)
	for _, key := range []string{"model.api_key", "terminal.cwd", "OPENAI_API_KEY"} {
		if removed, err := UnsetKey(home, key); err != nil || removed {
			t.Errorf("%s not set: UnsetKey = %v, %v", key, removed, err)
		}
	}
	st1, _ := os.Stat(cfg)
	env1, _ := os.Stat(envPath)
	if !st0.ModTime().Equal(st1.ModTime()) || !env0.ModTime().Equal(env1.ModTime()) || !os.SameFile(st0, st1) || !os.SameFile(env0, env1) {
		t.Error("unsetting keys that are not set rewrote a file")
	}
	fresh := t.TempDir()
	if removed, err := UnsetKey(fresh, "model.api_key"); err != nil || removed {
		t.Errorf("fresh home: %v, %v", removed, err)
	}
	if entries, _ := os.ReadDir(fresh); len(entries) != 0 {
		t.Errorf("unset in a fresh home created %v", entries)
	}
}

// `hermes config check` reports enumerated values that were written by
// hand, naming the key and the allowed values.
func TestProblemsReportEnumeratedValues(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "model:\n  provider: custom\n  base_url: http://localhost:1/v1\n  api_mode: responses\nterminal:\n  box_workspace: tmpfs\nagent:\n  reasoning_effort: max\n")
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.Problems(), "\n")
	for _, want := range []string{
		`model.api_mode: "responses" is not one of chat_completions, anthropic_messages`,
		`terminal.box_workspace: "tmpfs" is not one of bind, overlay`,
		`agent.reasoning_effort: "max" is not one of none, minimal, low, medium, high, xhigh`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}

// terminal.local_sandbox defaults to workspace-write; writable_paths must
// be absolute (or ~/) at set time and in config check.
func TestLocalSandboxDefaultAndWritablePaths(t *testing.T) {
	home := t.TempDir()
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Terminal.LocalSandbox != "workspace-write" {
		t.Fatalf("default local_sandbox = %q", l.Config.Terminal.LocalSandbox)
	}
	err = Set(home, "terminal.writable_paths", "[~/.cache, relative/dir]")
	if err == nil || !strings.Contains(err.Error(), `"relative/dir" is not an absolute path`) || !strings.Contains(err.Error(), "terminal.writable_paths") {
		t.Fatalf("want an error naming the key and the relative path, got %v", err)
	}
	if err := Set(home, "terminal.writable_paths", "[~/.cache, /opt/x]"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, "config.yaml"), "terminal:\n  local_sandbox: workspace_write\n  writable_paths: [cache]\n")
	l, err = Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.Problems(), "\n")
	for _, want := range []string{`terminal.local_sandbox: "workspace_write" is not one of workspace-write, read-only, off (did you mean "workspace-write"?)`, `"cache" is not an absolute path`} {
		if !strings.Contains(got, want) {
			t.Errorf("Problems lack %q:\n%s", want, got)
		}
	}
}

// Seed 004: with terminal.backend vercel_sandbox, `hermes config check`
// reports a cpu/memory pair Vercel refuses (the generic default 1 vCPU
// and 5,120 MB among them) instead of "config OK".
func TestProblemsReportVercelMemoryPerCPU(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		yaml string
		bad  bool
	}{
		{"terminal:\n  backend: vercel_sandbox\n", true},
		{"terminal:\n  backend: vercel_sandbox\n  container_cpu: 2\n  container_memory: 5120\n", true},
		{"terminal:\n  backend: vercel_sandbox\n  container_cpu: 2\n  container_memory: 4096\n", false},
		{"terminal:\n  backend: docker\n", false},
	} {
		writeFile(t, filepath.Join(home, "config.yaml"), tc.yaml)
		l, err := Load(home, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(l.Problems(), "\n")
		if has := strings.Contains(got, "2,048 MB of memory per vCPU"); has != tc.bad {
			t.Errorf("%q: problems %q, want the 2,048 MB per vCPU rule: %v", tc.yaml, got, tc.bad)
		}
	}
}

// terminal.protected_paths defaults to protect.Defaults(); entries must be
// clean workspace-relative paths at set time and in config check; an
// explicit [] turns the protection off.
func TestProtectedPathsDefaultAndCheck(t *testing.T) {
	home := t.TempDir()
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Config.Terminal.ProtectedPaths, " "); !strings.Contains(got, ".git/config") || !strings.Contains(got, ".git/hooks/") {
		t.Fatalf("default protected_paths = %q", got)
	}
	err = Set(home, "terminal.protected_paths", "[.git/config, /etc/passwd]")
	if err == nil || !strings.Contains(err.Error(), `"/etc/passwd" is not relative to the workspace`) || !strings.Contains(err.Error(), "terminal.protected_paths") {
		t.Fatalf("want an error naming the key and the absolute path, got %v", err)
	}
	writeFile(t, filepath.Join(home, "config.yaml"), "terminal:\n  protected_paths: [../up]\n")
	if l, err = Load(home, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Problems(), "\n"); !strings.Contains(got, `terminal.protected_paths: "../up" is not a clean relative path`) {
		t.Errorf("Problems lack the bad entry:\n%s", got)
	}
	writeFile(t, filepath.Join(home, "config.yaml"), "terminal:\n  protected_paths: []\n")
	if l, err = Load(home, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(l.Config.Terminal.ProtectedPaths) != 0 {
		t.Errorf("[] kept %v", l.Config.Terminal.ProtectedPaths)
	}
}

// messaging.allowed_targets entries are chats in cron's deliver form, at
// set time and in config check.
func TestMessagingAllowedTargetsCheck(t *testing.T) {
	home := t.TempDir()
	if err := Set(home, "messaging.allowed_targets", "[telegram:-1001234:7, slack:C0123]"); err != nil {
		t.Fatalf("valid targets refused: %v", err)
	}
	err := Set(home, "messaging.allowed_targets", "[telegram:42, '#general']")
	if err == nil || !strings.Contains(err.Error(), `"#general" is not a chat`) || !strings.Contains(err.Error(), "messaging.allowed_targets") {
		t.Fatalf("want an error naming the key and the entry, got %v", err)
	}
	writeFile(t, filepath.Join(home, "config.yaml"), "messaging:\n  allowed_targets: [telegram]\n")
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Problems(), "\n"); !strings.Contains(got, `messaging.allowed_targets: "telegram" is not a chat`) {
		t.Errorf("Problems lack the bad entry:\n%s", got)
	}
}

// New-user trial: an allowed target on a platform hermes cannot message
// (slak:C01) is refused by config set and reported by config check with
// config.yaml's file:line, the entry and the platforms.
func TestMessagingAllowedTargetsPlatform(t *testing.T) {
	home := t.TempDir()
	err := Set(home, "messaging.allowed_targets", "[telegram:42, slak:C01]")
	if err == nil || !strings.Contains(err.Error(), `"slak:C01"`) || !strings.Contains(err.Error(), "telegram, discord, slack") ||
		!strings.Contains(err.Error(), `did you mean "slack:C01"`) {
		t.Fatalf("want an error naming the entry and the platforms, got %v", err)
	}
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, "model:\n  provider: openrouter\nmessaging:\n  allowed_targets: [discord:1, matrix:room]\n")
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := path + `:4: messaging.allowed_targets: "matrix:room": hermes cannot message platform "matrix"; use one of telegram, discord, slack`
	if got := strings.Join(l.Problems(), "\n"); !strings.Contains(got, want) {
		t.Errorf("Problems lack %q:\n%s", want, got)
	}
}

// delegation.max_spawn_depth above 2 (README: at most 2) is refused by
// config set and reported by config check, saying the limit.
func TestDelegationMaxSpawnDepthLimit(t *testing.T) {
	home := t.TempDir()
	if err := Set(home, "delegation.max_spawn_depth", "2"); err != nil {
		t.Fatalf("2 refused: %v", err)
	}
	err := Set(home, "delegation.max_spawn_depth", "3")
	if err == nil || !strings.Contains(err.Error(), "delegation.max_spawn_depth: must be between 1 and 2, got 3") {
		t.Fatalf("want the limit, got %v", err)
	}
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, "delegation:\n  max_spawn_depth: 5\n")
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Problems(), "\n"); !strings.Contains(got, path+":2: delegation.max_spawn_depth: must be between 1 and 2, got 5") {
		t.Errorf("Problems lack the depth:\n%s", got)
	}
}
