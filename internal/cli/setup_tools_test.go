package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestSetupToolsNonInteractive: --toolsets round trips through
// config.yaml; an unknown name is refused naming the available ones;
// all clears the list.
func TestSetupToolsNonInteractive(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("setup", "tools", "--non-interactive", "--toolsets", "terminal,file"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if got := loadTestConfig(t, ta).Config.Toolsets; !slices.Equal(got, []string{"terminal", "file"}) {
		t.Errorf("toolsets = %v", got)
	}
	if code := ta.run("setup", "tools", "--non-interactive", "--toolsets", "terminal,webz"); code != 1 ||
		!strings.Contains(ta.stderr.String(), `"webz"`) || !strings.Contains(ta.stderr.String(), "available: ") {
		t.Errorf("unknown toolset: %d %s", code, ta.stderr)
	}
	if got := loadTestConfig(t, ta).Config.Toolsets; !slices.Equal(got, []string{"terminal", "file"}) {
		t.Errorf("a refused run changed toolsets: %v", got)
	}
	if code := ta.run("setup", "tools", "--toolsets", "all"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if got := loadTestConfig(t, ta).Config.Toolsets; len(got) != 0 {
		t.Errorf("all: toolsets = %v", got)
	}
	if code := ta.run("setup", "tools", "--non-interactive"); code != 1 || !strings.Contains(ta.stderr.String(), "--toolsets") {
		t.Errorf("no flags: %d %s", code, ta.stderr)
	}
}

// TestSetupToolsWizard: the wizard lists every toolset as enabled, and
// toggling one off saves the others.
func TestSetupToolsWizard(t *testing.T) {
	ta := newTestApp(t, nil, "", true)
	ta.Stdin = strings.NewReader("1\n\n") // toggle the first toolset off, save
	if code := ta.run("setup", "tools"); code != 0 {
		t.Fatalf("%d %s\n%s", code, ta.stderr, ta.stdout)
	}
	out := ta.stdout.String()
	if !strings.Contains(out, "1) [x]") || !strings.Contains(out, "1) [ ]") {
		t.Errorf("wizard output:\n%s", out)
	}
	got := loadTestConfig(t, ta).Config.Toolsets
	if len(got) == 0 || strings.Contains(out, "Enabled toolsets: all") {
		t.Errorf("toolsets = %v\n%s", got, out)
	}
}

// TestSetupGatewayIsGatewaySetup: `hermes setup gateway` runs the same
// code as `hermes gateway setup`.
func TestSetupGatewayIsGatewaySetup(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("setup", "gateway", "--non-interactive", "--telegram-token", testTelegramToken, "--telegram-allowed-users", "42"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	env, mode := readDotEnv(t, ta.home)
	if env["TELEGRAM_BOT_TOKEN"] != testTelegramToken || env["TELEGRAM_ALLOWED_USERS"] != "42" || mode != 0o600 {
		t.Errorf(".env = %v (mode %v)", env, mode)
	}
	if code := ta.run("setup", "gateway", "--non-interactive"); code != 1 || !strings.Contains(ta.stderr.String(), "nothing to set") {
		t.Errorf("no flags: %d %s", code, ta.stderr)
	}
}
