package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

func setupConfig(t *testing.T, ta *testApp) config.Config {
	t.Helper()
	return loadTestConfig(t, ta).Config
}

// setup terminal --non-interactive writes what the flags say, keeps the
// rest of config.yaml (comments included), and reads back the same.
func TestSetupTerminalNonInteractiveRoundTrip(t *testing.T) {
	ta := newTestApp(t, nil, "", true)
	path := filepath.Join(ta.home, "config.yaml")
	if err := os.WriteFile(path, []byte("# mine\nagent:\n  max_turns: 7 # keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code := ta.run("setup", "terminal", "--non-interactive", "--backend", "box", "--memory", "4096", "--cpu", "1.5",
		"--disk", "20480", "--image", "host", "--allow", "pypi.org", "--allow", "*.pythonhosted.org,api.example.com:443")
	if code != 0 {
		t.Fatalf("setup: %d %s", code, ta.stderr)
	}
	c := setupConfig(t, ta)
	tc := c.Terminal
	if tc.Backend != "box" || tc.ContainerMemory != 4096 || tc.ContainerCPU != 1.5 || tc.ContainerDisk != 20480 || tc.BoxImage != "host" {
		t.Errorf("terminal after setup: %+v", tc)
	}
	if want := []string{"pypi.org", "*.pythonhosted.org", "api.example.com:443"}; !slices.Equal(tc.BoxNetwork.Allow, want) {
		t.Errorf("allow = %v, want %v", tc.BoxNetwork.Allow, want)
	}
	b, _ := os.ReadFile(path)
	if c.Agent.MaxTurns != 7 || !strings.Contains(string(b), "# keep") {
		t.Errorf("other settings and comments must survive:\n%s", b)
	}
	// Running it again with the values read back changes nothing.
	if code := ta.run("setup", "terminal", "--non-interactive", "--backend", "box", "--memory", "4096", "--cpu", "1.5",
		"--disk", "20480", "--image", "host", "--allow", strings.Join(tc.BoxNetwork.Allow, ",")); code != 0 {
		t.Fatal(ta.stderr)
	}
	if again, _ := os.ReadFile(path); string(again) != string(b) {
		t.Errorf("a second identical setup changed the file:\n%s\n---\n%s", b, again)
	}
}

// A bad value is refused with the flag named, and nothing is written,
// not even the valid flags given with it.
func TestSetupTerminalRejectsBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--backend", "kubernetes"},
		{"--backend", "box", "--memory", "lots"},
		{"--backend", "box", "--cpu", "0"},
		{"--backend", "box", "--image", "/no/such/rootfs"},
		{"--backend", "box", "--allow", "http://x/"},
	} {
		ta := newTestApp(t, nil, "", false)
		code := ta.run(append([]string{"setup", "terminal", "--non-interactive"}, args...)...)
		flag := args[len(args)-2]
		if code != 1 || !strings.Contains(ta.stderr.String(), flag) {
			t.Errorf("%v: want exit 1 naming %s, got %d %s", args, flag, code, ta.stderr)
		}
		if _, err := os.Stat(filepath.Join(ta.home, "config.yaml")); err == nil {
			t.Errorf("%v: config.yaml was written", args)
		}
	}
}

// setup model --non-interactive is `hermes model` with flags: provider and
// model in config.yaml, the key in .env (0600), even on a terminal.
func TestSetupModelNonInteractiveRoundTrip(t *testing.T) {
	ta := newTestApp(t, nil, "", true)
	code := ta.run("setup", "model", "--non-interactive", "--provider", "custom", "--model", "qwen3",
		"--base-url", "http://localhost:11434/v1", "--api-key", "sk-local-123456")
	if code != 0 {
		t.Fatalf("setup model: %d %s", code, ta.stderr)
	}
	m := setupConfig(t, ta).Model
	if m.Provider != "custom" || m.Default != "qwen3" || m.BaseURL != "http://localhost:11434/v1" || m.APIKey != "sk-local-123456" {
		t.Errorf("model after setup: %+v", m)
	}
	if strings.Contains(ta.stdout.String(), "sk-local-123456") {
		t.Error("the key must not be printed")
	}
	if st, err := os.Stat(filepath.Join(ta.home, ".env")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf(".env: %v %v", st, err)
	}
	if code := ta.run("setup", "model", "--non-interactive"); code != 1 {
		t.Errorf("no flags without prompting must fail, got %d", code)
	}
}

// Plain `setup` takes the model flags as Hermes's does: `hermes setup
// --non-interactive --provider P --model M` was "unknown flag: --provider".
func TestSetupTakesTheModelFlags(t *testing.T) {
	ta := newTestApp(t, nil, "", true)
	code := ta.run("setup", "--non-interactive", "--provider", "custom", "--model", "qwen3",
		"--base-url", "http://localhost:11434/v1")
	if code != 0 {
		t.Fatalf("setup --non-interactive --provider ...: %d %s", code, ta.stderr)
	}
	if m := setupConfig(t, ta).Model; m.Provider != "custom" || m.Default != "qwen3" || m.BaseURL != "http://localhost:11434/v1" {
		t.Errorf("model after setup: %+v", m)
	}
	if code := ta.run("setup", "--non-interactive"); code != 1 || !strings.Contains(ta.stderr.String(), "--provider") {
		t.Errorf("setup --non-interactive without flags: %d %s", code, ta.stderr)
	}
}

// On a terminal the wizard asks each setting, re-asks after a bad answer,
// and takes the default on Enter.
func TestSetupTerminalWizard(t *testing.T) {
	ta := newTestApp(t, nil, "box\nlots\n2048\n\n\nhost\npypi.org, files.pythonhosted.org\n", true)
	if code := ta.run("setup", "terminal"); code != 0 {
		t.Fatalf("wizard: %d %s\n%s", code, ta.stderr, ta.stdout)
	}
	tc := setupConfig(t, ta).Terminal
	if tc.Backend != "box" || tc.ContainerMemory != 2048 || tc.ContainerCPU != 1 || tc.ContainerDisk != 51200 {
		t.Errorf("terminal after the wizard: %+v", tc)
	}
	if !slices.Equal(tc.BoxNetwork.Allow, []string{"pypi.org", "files.pythonhosted.org"}) {
		t.Errorf("allow = %v", tc.BoxNetwork.Allow)
	}
	if !strings.Contains(ta.stdout.String(), `--memory "lots"`) {
		t.Errorf("a bad answer must be explained:\n%s", ta.stdout)
	}
}
