package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		config     string
		dotenv     string
		env        map[string]string
		flag       string // value for Override("model.default", ...)
		wantModel  string
		wantSource string
	}{
		{name: "default", wantModel: "", wantSource: "default"},
		{name: "dotenv", dotenv: "HERMES_INFERENCE_MODEL=from-dotenv\n", wantModel: "from-dotenv", wantSource: ".env HERMES_INFERENCE_MODEL"},
		{name: "process env beats dotenv", dotenv: "HERMES_INFERENCE_MODEL=from-dotenv\n",
			env: map[string]string{"HERMES_INFERENCE_MODEL": "from-env"}, wantModel: "from-env", wantSource: "env HERMES_INFERENCE_MODEL"},
		{name: "config beats env", config: "model:\n  default: from-config\n",
			env: map[string]string{"HERMES_INFERENCE_MODEL": "from-env"}, wantModel: "from-config", wantSource: "config.yaml"},
		{name: "flag beats config", config: "model:\n  default: from-config\n", flag: "from-flag",
			wantModel: "from-flag", wantSource: "flag"},
		{name: "shorthand", config: "model: short-name\n", wantModel: "short-name", wantSource: "config.yaml"},
		{name: "model.model alias", config: "model:\n  model: aliased\n", wantModel: "aliased", wantSource: "config.yaml"},
		{name: "default beats alias", config: "model:\n  model: aliased\n  default: canonical\n", wantModel: "canonical", wantSource: "config.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.config != "" {
				writeFile(t, filepath.Join(home, "config.yaml"), tc.config)
			}
			if tc.dotenv != "" {
				writeFile(t, filepath.Join(home, ".env"), tc.dotenv)
			}
			l, err := Load(home, LoadOptions{Getenv: mapEnv(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.flag != "" {
				if err := l.Override("model.default", tc.flag); err != nil {
					t.Fatal(err)
				}
			}
			if l.Config.Model.Default != tc.wantModel {
				t.Errorf("model.default = %q, want %q", l.Config.Model.Default, tc.wantModel)
			}
			if got := l.Source("model.default"); got != tc.wantSource {
				t.Errorf("source = %q, want %q", got, tc.wantSource)
			}
			if len(l.Warnings) > 0 {
				t.Errorf("unexpected warnings: %v", l.Warnings)
			}
		})
	}
}

func TestLoadEnvOverrides(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{
		"TERMINAL_ENV": "box", "TERMINAL_TIMEOUT": "60", "HERMES_MAX_ITERATIONS": "7",
		"HERMES_YOLO_MODE": "1", "TERMINAL_ENV_PASSTHROUGH": "A, B", "TERMINAL_CONTAINER_CPU": "lots",
	}
	l, err := Load(home, LoadOptions{Getenv: mapEnv(env)})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Terminal.Backend != "box" || c.Terminal.Timeout != 60 || c.Agent.MaxTurns != 7 || c.Approvals.Mode != "off" {
		t.Errorf("overrides not applied: %+v %+v %+v", c.Terminal, c.Agent, c.Approvals)
	}
	if strings.Join(c.Terminal.EnvPassthrough, "|") != "A|B" {
		t.Errorf("env_passthrough = %q", c.Terminal.EnvPassthrough)
	}
	if c.Terminal.ContainerCPU != 1 {
		t.Errorf("bad TERMINAL_CONTAINER_CPU must keep the default, got %v", c.Terminal.ContainerCPU)
	}
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "TERMINAL_CONTAINER_CPU") || !strings.Contains(l.Warnings[0], "terminal.container_cpu") {
		t.Errorf("warnings = %q, want one naming TERMINAL_CONTAINER_CPU", l.Warnings)
	}
	if err := l.Override("terminal.timeout", "abc"); err == nil || !strings.Contains(err.Error(), "terminal.timeout") {
		t.Errorf("Override with a bad value: %v", err)
	}
}

func TestLoadIgnoreUserConfig(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "model: from-config\n")
	writeFile(t, filepath.Join(home, ".env"), "OPENAI_API_KEY=sk-dotenv\n")
	for _, opts := range []LoadOptions{
		{IgnoreUserConfig: true},
		{Getenv: mapEnv(map[string]string{"HERMES_SAFE_MODE": "1"})},
	} {
		l, err := Load(home, opts)
		if err != nil {
			t.Fatal(err)
		}
		if l.Config.Model.Default != "" {
			t.Errorf("config.yaml was read: %q", l.Config.Model.Default)
		}
		if l.Getenv("OPENAI_API_KEY") != "sk-dotenv" {
			t.Errorf(".env must still be read")
		}
	}
}

func TestLoadExpandsVariables(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), `model:
  api_key: ${MY_KEY}
  base_url: "http://${env:HOST}:8080/v1"
terminal:
  cwd: ${NOT_SET_ANYWHERE}/work
  timeout: ${TIMEOUT}
  env_passthrough: [$PLAIN, "${HOST}"]
`)
	writeFile(t, filepath.Join(home, ".env"), "MY_KEY=sk-from-dotenv\nTIMEOUT=42\n")
	l, err := Load(home, LoadOptions{Getenv: mapEnv(map[string]string{"HOST": "127.0.0.1"})})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Model.APIKey != "sk-from-dotenv" || c.Model.BaseURL != "http://127.0.0.1:8080/v1" || c.Terminal.Timeout != 42 {
		t.Errorf("expansion: %+v timeout=%d", c.Model, c.Terminal.Timeout)
	}
	if c.Terminal.Cwd != "${NOT_SET_ANYWHERE}/work" {
		t.Errorf("unset variable must stay verbatim, got %q", c.Terminal.Cwd)
	}
	if got := strings.Join(c.Terminal.EnvPassthrough, "|"); got != "$PLAIN|127.0.0.1" {
		t.Errorf("bare $VAR must not expand: %q", got)
	}
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "NOT_SET_ANYWHERE") || !strings.Contains(l.Warnings[0], ":5:") {
		t.Errorf("warnings = %q, want one for NOT_SET_ANYWHERE at line 5", l.Warnings)
	}
}

func TestLoadBrokenYAMLNamesLine(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, "model:\n  default: x\nterminal:\n  env_passthrough: [a, b\n  timeout: 5\n")
	_, err := Load(home, LoadOptions{})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %T %v", err, err)
	}
	if ce.Path != path || ce.Line < 4 || ce.Line > 5 || !strings.Contains(ce.Msg, "invalid YAML") {
		t.Errorf("error = %+v", ce)
	}
	if strings.Contains(err.Error(), "goroutine") || strings.Contains(err.Error(), "panic") {
		t.Errorf("stack trace in error: %v", err)
	}
}

func TestLoadWrongTypeNamesKeyAndLine(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	writeFile(t, path, "terminal:\n  backend: local\n  timeout: abc\nmemory:\n  memory_enabled: maybe\nmodel: [a]\n")
	_, err := Load(home, LoadOptions{})
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{
		path + `:3: terminal.timeout: expected an integer (e.g. 180), got "abc"`,
		path + `:5: memory.memory_enabled: expected true or false, got "maybe"`,
		path + `:6: model: expected a section`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "terminal.timeout" || ce.Line != 3 {
		t.Errorf("first error = %+v", ce)
	}
}

func TestLoadUnknownKeysWarn(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), `terminal:
  modal_image: nikolaik/python-nodejs
max_turns: 5
auxiliary:
  approval:
    provider: auto
display:
  tool_progress: all
_config_version: 17
completely_new_thing: 1
`)
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 3 {
		t.Fatalf("warnings = %q, want 3 (max_turns, completely_new_thing, the Hermes-only summary)", l.Warnings)
	}
	if !strings.Contains(l.Warnings[0], `:3: max_turns: unknown key (did you mean "agent.max_turns"?)`) {
		t.Errorf("warning 0 = %q", l.Warnings[0])
	}
	if !strings.Contains(l.Warnings[1], "completely_new_thing") {
		t.Errorf("warning 1 = %q", l.Warnings[1])
	}
	if w := l.Warnings[2]; !strings.Contains(w, "3 Hermes Agent setting(s)") || !strings.Contains(w, "terminal.modal_image") ||
		!strings.Contains(w, "display") || strings.Contains(w, "_config_version") {
		t.Errorf("Hermes-only summary = %q", w)
	}
	if fmt.Sprint(l.UnknownKeys) != "[max_turns completely_new_thing]" {
		t.Errorf("UnknownKeys = %q", l.UnknownKeys)
	}
	if l.Config.Terminal.Timeout != 180 {
		t.Errorf("unknown key changed timeout: %d", l.Config.Terminal.Timeout)
	}
}

// Regression (issue 8): `terminl:` only warned, so `backend: box` under it
// was dropped and a --yolo run went to the host. A close misspelling of a
// known key is an error naming the line and the key meant.
func TestLoadMisspelledKeyIsError(t *testing.T) {
	for _, tc := range []struct{ yaml, key, want string }{
		{"terminl:\n  backend: box\n", "terminl", "terminal"},
		{"terminal:\n  backnd: box\n", "terminal.backnd", "terminal.backend"},
		{"terminal:\n  timout: 30\n", "terminal.timout", "terminal.timeout"},
		{"modle:\n  default: x\n", "modle", "model"},
	} {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, "config.yaml"), tc.yaml)
		_, err := Load(home, LoadOptions{})
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), fmt.Sprintf("did you mean %q", tc.want)) {
			t.Errorf("%q: err = %v, want an error for %s suggesting %s", tc.yaml, err, tc.key, tc.want)
		}
	}
}

func TestLoadDuplicateKeyIsError(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "agent:\n  max_turns: 5\n  max_turns: 6\n")
	_, err := Load(home, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "agent.max_turns") || !strings.Contains(err.Error(), ":3:") {
		t.Errorf("duplicate key: %v", err)
	}
}

func TestLoadTopLevelCommandAllowlistAlias(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "command_allowlist: [\"git status\"]\n")
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Config.Approvals.CommandAllowlist) != 1 || l.Config.Approvals.CommandAllowlist[0] != "git status" {
		t.Errorf("allowlist = %q", l.Config.Approvals.CommandAllowlist)
	}
}

func TestGet(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "terminal:\n  timeout: 99\n")
	writeFile(t, filepath.Join(home, ".env"), "OPENAI_API_KEY=sk-test\n")
	l, err := Load(home, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := Get(l, "terminal.timeout"); err != nil || v != 99 {
		t.Errorf("Get timeout = %v, %v", v, err)
	}
	if v, err := Get(l, "memory.memory_enabled"); err != nil || v != true {
		t.Errorf("Get memory_enabled = %v, %v", v, err)
	}
	if v, err := Get(l, "OPENAI_API_KEY"); err != nil || v != "sk-test" {
		t.Errorf("Get OPENAI_API_KEY = %v, %v", v, err)
	}
	if v, _ := Get(l, "terminal"); v.(TerminalConfig).Timeout != 99 {
		t.Errorf("Get section = %v", v)
	}
	if _, err := Get(l, "terminal.backnd"); err == nil || !strings.Contains(err.Error(), `did you mean "terminal.backend"`) {
		t.Errorf("Get unknown = %v", err)
	}
}

// Regression (issue 8): a config.yaml that is a directory was reported as
// "read X: read X: is a directory".
func TestLoadDirectoryConfigNamesFileOnce(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "config.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(home, LoadOptions{})
	if err == nil || strings.Count(err.Error(), "config.yaml") != 1 || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err = %v, want the file named once", err)
	}
}
