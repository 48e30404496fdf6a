package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testApp is an App on a temporary HERMES_HOME with the given environment
// and stdin.
type testApp struct {
	*App
	home   string
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

func newTestApp(t *testing.T, env map[string]string, stdin string, terminal bool) *testApp {
	t.Helper()
	home := t.TempDir()
	e := map[string]string{"HERMES_HOME": home}
	for k, v := range env {
		e[k] = v
	}
	var out, errb bytes.Buffer
	app := &App{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv:     func(k string) string { return e[k] },
		Environ:    func() []string { return nil },
		Now:        func() time.Time { return time.Date(2026, 11, 30, 14, 55, 0, 0, time.UTC) },
		IsTerminal: terminal,
	}
	return &testApp{App: app, home: home, stdout: &out, stderr: &errb}
}

func (ta *testApp) run(args ...string) int {
	ta.stdout.Reset()
	ta.stderr.Reset()
	return ta.Run(context.Background(), args)
}

func TestConfigSetGetShowMasksSecrets(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("config", "set", "OPENROUTER_API_KEY", "sk-or-v1-secretvalue9876"); code != 0 {
		t.Fatalf("set key: %d %s", code, ta.stderr)
	}
	if strings.Contains(ta.stdout.String(), "secretvalue") || !strings.Contains(ta.stdout.String(), "****9876") {
		t.Errorf("set printed the secret: %s", ta.stdout)
	}
	if code := ta.run("config", "set", "terminal.timeout", "300"); code != 0 {
		t.Fatalf("set timeout: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "get", "terminal.timeout"); code != 0 || ta.stdout.String() != "300\n" {
		t.Errorf("get timeout = %d %q", code, ta.stdout)
	}
	if code := ta.run("config", "get", "OPENROUTER_API_KEY"); code != 0 || ta.stdout.String() != "****9876\n" {
		t.Errorf("get key = %d %q", code, ta.stdout)
	}
	if code := ta.run("config", "set", "model.api_key", "sk-custom-key-5555"); code != 0 {
		t.Fatalf("set model.api_key: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "show"); code != 0 {
		t.Fatalf("show: %d %s", code, ta.stderr)
	}
	show := ta.stdout.String()
	if strings.Contains(show, "secretvalue") || strings.Contains(show, "sk-custom") {
		t.Errorf("show leaked a secret:\n%s", show)
	}
	for _, want := range []string{"timeout: 300", "api_key: '****5555'", "OPENROUTER_API_KEY=****9876  # .env"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if code := ta.run("config", "get", "model"); code != 0 || strings.Contains(ta.stdout.String(), "sk-custom") {
		t.Errorf("get model section leaked: %s", ta.stdout)
	}
	st, err := os.Stat(filepath.Join(ta.home, ".env"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf(".env mode: %v %v", st, err)
	}
}

func TestConfigErrorsNameKeyAndFile(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("config", "set", "terminal.timeout", "abc"); code != 1 ||
		!strings.Contains(ta.stderr.String(), `terminal.timeout: expected an integer`) {
		t.Errorf("bad value: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "get", "terminal.timout"); code != 1 || !strings.Contains(ta.stderr.String(), `did you mean "terminal.timeout"`) {
		t.Errorf("unknown key: %d %s", code, ta.stderr)
	}
	path := filepath.Join(ta.home, "config.yaml")
	os.WriteFile(path, []byte("model:\n  default: x\n  provider: [oops\n"), 0o600)
	for _, args := range [][]string{{"config", "show"}, {"config", "check"}} {
		code := ta.run(args...)
		msg := ta.stderr.String()
		if code != 1 || !strings.Contains(msg, path+":") || !strings.Contains(msg, "invalid YAML") || strings.Contains(msg, "goroutine") {
			t.Errorf("%v on broken YAML: %d %s", args, code, msg)
		}
	}
	os.WriteFile(path, []byte("terminal:\n  timout: 5\n"), 0o600)
	// A close misspelling is an error (issue 8: terminl: turned the box off).
	if code := ta.run("config", "check"); code != 1 || !strings.Contains(ta.stderr.String(), path+`:2: terminal.timout: unknown key (did you mean "terminal.timeout"?)`) {
		t.Errorf("misspelled key: %d %s", code, ta.stderr)
	}
}

func TestConfigPathsAndCheck(t *testing.T) {
	ta := newTestApp(t, map[string]string{"OPENAI_API_KEY": "sk-x"}, "", false)
	if ta.run("config", "path"); ta.stdout.String() != filepath.Join(ta.home, "config.yaml")+"\n" {
		t.Errorf("path = %q", ta.stdout)
	}
	if ta.run("config", "env-path"); ta.stdout.String() != filepath.Join(ta.home, ".env")+"\n" {
		t.Errorf("env-path = %q", ta.stdout)
	}
	ta.run("config", "set", "model.provider", "openai")
	if code := ta.run("config", "check"); code != 0 || !strings.Contains(ta.stdout.String(), "config OK") {
		t.Errorf("check: %d %s %s", code, ta.stdout, ta.stderr)
	}
	ta.run("config", "set", "model.provider", "anthropic")
	if code := ta.run("config", "check"); code != 1 || !strings.Contains(ta.stdout.String(), "ANTHROPIC_API_KEY is not set") {
		t.Errorf("check without key: %d %s", code, ta.stdout)
	}
	if code := ta.run("config", "unset", "model.provider"); code != 0 {
		t.Errorf("unset: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "get", "model.provider"); code != 0 || ta.stdout.String() != "\n" {
		t.Errorf("after unset: %q", ta.stdout)
	}
}

func TestConfigSetSecretFromStdin(t *testing.T) {
	ta := newTestApp(t, nil, "sk-typed-secret-4321\n", true)
	if code := ta.run("config", "set", "OPENAI_API_KEY"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if strings.Contains(ta.stdout.String(), "typed-secret") {
		t.Errorf("secret echoed: %s", ta.stdout)
	}
	b, _ := os.ReadFile(filepath.Join(ta.home, ".env"))
	if string(b) != "OPENAI_API_KEY=sk-typed-secret-4321\n" {
		t.Errorf(".env = %q", b)
	}
}

// Values that start with '-' are values, not flags, and are then
// validated like any other; --help still shows the usage.
func TestConfigSetDashValuesAndValidation(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("config", "set", "agent.max_turns", "-3"); code != 1 ||
		!strings.Contains(ta.stderr.String(), "agent.max_turns: must not be negative") || strings.Contains(ta.stderr.String(), "unknown shorthand flag") {
		t.Errorf("negative max_turns: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "set", "agent.system_prompt", "-be terse-"); code != 0 {
		t.Fatalf("dash string value: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "get", "agent.system_prompt"); code != 0 || ta.stdout.String() != "-be terse-\n" {
		t.Errorf("get system_prompt = %d %q", code, ta.stdout)
	}
	if code := ta.run("config", "set", "terminal.timeout", "--", "30"); code != 0 {
		t.Errorf("value after --: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "set", "terminal.backend", "modal"); code != 1 ||
		!strings.Contains(ta.stderr.String(), `terminal.backend: "modal" is not one of local, box`) {
		t.Errorf("bad backend: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "set", "approvals.mode", "of"); code != 1 || !strings.Contains(ta.stderr.String(), `did you mean "off"?`) {
		t.Errorf("bad mode: %d %s", code, ta.stderr)
	}
	for _, help := range [][]string{{"config", "set", "--help"}, {"config", "set", "-h"}, {"config", "set", "model.default", "--help"}, {"config", "set"}} {
		code := ta.run(help...)
		if !strings.Contains(ta.stdout.String()+ta.stderr.String(), "hermes config set KEY [VALUE]") {
			t.Errorf("%v: no usage: %d %s %s", help, code, ta.stdout, ta.stderr)
		}
	}
	if code := ta.run("config", "set", "--help"); code != 0 {
		t.Errorf("--help exit = %d", code)
	}
}

// An empty secret, typed or piped, is refused and nothing is saved.
func TestConfigSetRefusesEmptySecret(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("config", "set", "OPENROUTER_API_KEY", ""); code != 1 || !strings.Contains(ta.stderr.String(), "OPENROUTER_API_KEY: an empty value is not saved") {
		t.Errorf("empty argument: %d %s", code, ta.stderr)
	}
	if code := ta.run("config", "set", "OPENAI_API_KEY"); code != 1 || !strings.Contains(ta.stderr.String(), "OPENAI_API_KEY") || !strings.Contains(ta.stderr.String(), "empty") {
		t.Errorf("empty stdin: %d %s", code, ta.stderr)
	}
	if _, err := os.Stat(filepath.Join(ta.home, ".env")); err == nil {
		t.Error("an empty secret created .env")
	}
}

// `config unset model.api_key` removes the secret from .env too; unsetting
// a key that is not set says so, exits 0 and writes nothing.
func TestConfigUnsetSecretAndNotSet(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	envPath, cfgPath := filepath.Join(ta.home, ".env"), filepath.Join(ta.home, "config.yaml")
	if code := ta.run("config", "set", "model.api_key", "sk-custom-key-5555"); code != 0 {
		t.Fatalf("set: %d %s", code, ta.stderr)
	}
	os.WriteFile(cfgPath, []byte("model:\n  default: m\n"), 0o600) // the reference was removed by hand
	if code := ta.run("config", "unset", "model.api_key"); code != 0 || !strings.Contains(ta.stdout.String(), "Removed model.api_key") {
		t.Errorf("unset: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if b, _ := os.ReadFile(envPath); strings.Contains(string(b), "MODEL_API_KEY") {
		t.Errorf(".env still holds the secret: %q", b)
	}
	before, _ := os.ReadFile(cfgPath)
	st0, _ := os.Stat(cfgPath)
	for _, key := range []string{"model.api_key", "terminal.cwd", "OPENAI_API_KEY"} {
		if code := ta.run("config", "unset", key); code != 0 || ta.stdout.String() != key+" is not set\n" {
			t.Errorf("unset %s (not set): %d %q %s", key, code, ta.stdout, ta.stderr)
		}
	}
	after, _ := os.ReadFile(cfgPath)
	st1, _ := os.Stat(cfgPath)
	if string(before) != string(after) || !os.SameFile(st0, st1) {
		t.Error("unsetting keys that are not set rewrote config.yaml")
	}
}

// `config show` prints 0 for unset timeouts and turn limits; it says what a
// 0 stands for (the README's defaults), so 0 does not read as "no timeout".
func TestConfigShowExplainsZeroDefaults(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("config", "show"); code != 0 {
		t.Fatalf("config show: %d %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	for _, want := range []string{"request_timeout: 0", "model.request_timeout 300 s", "model.stream_idle_timeout 120 s", "agent.max_turns 90"} {
		if !strings.Contains(out, want) {
			t.Errorf("config show lacks %q:\n%s", want, out)
		}
	}
}

// `config set terminal.cwd /nonexist` was saved and every later run failed
// with "terminal.cwd is not a directory".
func TestConfigSetCwdMustBeADirectory(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	missing := filepath.Join(t.TempDir(), "nonexist")
	if code := ta.run("config", "set", "terminal.cwd", missing); code == 0 || !strings.Contains(ta.stderr.String(), "is not a directory") {
		t.Errorf("config set terminal.cwd %s = %d, stderr %q", missing, code, ta.stderr)
	}
	if code := ta.run("config", "set", "terminal.cwd", t.TempDir()); code != 0 {
		t.Errorf("config set terminal.cwd DIR = %d, stderr %q", code, ta.stderr)
	}
}
