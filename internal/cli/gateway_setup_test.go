package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

const testTelegramToken = "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

func readDotEnv(t *testing.T, home string) (map[string]string, os.FileMode) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(home, ".env"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string {
		if k == "HERMES_HOME" {
			return home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	return l.DotEnv, fi.Mode().Perm()
}

func TestGatewaySetupNonInteractive(t *testing.T) {
	ta := newTestApp(t, nil, "xoxb-1111-2222-abcdefgh\n", false)
	code := ta.run("gateway", "setup", "--non-interactive", "--telegram-token", testTelegramToken,
		"--telegram-allowed-users", "11, 12", "--slack-bot-token", "-", "--api-server", "--api-server-host", "0.0.0.0")
	if code != 0 {
		t.Fatalf("setup: %d %s", code, ta.stderr)
	}
	env, mode := readDotEnv(t, ta.home)
	if mode != 0o600 {
		t.Errorf(".env mode %v, want 0600", mode)
	}
	want := map[string]string{"TELEGRAM_BOT_TOKEN": testTelegramToken, "TELEGRAM_ALLOWED_USERS": "11,12",
		"SLACK_BOT_TOKEN": "xoxb-1111-2222-abcdefgh", "API_SERVER_ENABLED": "true", "API_SERVER_HOST": "0.0.0.0"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if !strings.HasPrefix(env["API_SERVER_KEY"], "hermes-") || len(env["API_SERVER_KEY"]) < 40 {
		t.Errorf("an open API server got no generated key: %q", env["API_SERVER_KEY"])
	}
	out := ta.stdout.String() + ta.stderr.String()
	for _, secret := range []string{testTelegramToken, "xoxb-1111-2222-abcdefgh", env["API_SERVER_KEY"]} {
		if strings.Contains(out, secret) {
			t.Errorf("setup printed a secret:\n%s", out)
		}
	}
}

func TestGatewaySetupRejectsBadValuesAndWritesNothing(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--telegram-token", testTelegramToken, "--telegram-allowed-users", "@alice"}, `"@alice" is not a user id`},
		{[]string{"--telegram-token", "not-a-token"}, "TELEGRAM_BOT_TOKEN"},
		{[]string{"--slack-app-token", "xoxb-wrong-kind"}, "xapp-"},
		{[]string{"--api-server", "--api-server-port", "99999"}, "API_SERVER_PORT"},
		{nil, "nothing to set"},
	} {
		ta := newTestApp(t, nil, "", false)
		code := ta.run(append([]string{"gateway", "setup", "--non-interactive"}, c.args...)...)
		if code != 1 || !strings.Contains(ta.stderr.String(), c.want) {
			t.Errorf("%v: %d %q, want an error naming %q", c.args, code, ta.stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(ta.home, ".env")); err == nil {
			t.Errorf("%v: .env written despite the error", c.args)
		}
		if strings.Contains(ta.stderr.String(), testTelegramToken) {
			t.Errorf("the error printed the token")
		}
	}
}

func TestGatewaySetupWizard(t *testing.T) {
	answers := strings.Join([]string{
		"y",               // API server
		testTelegramToken, // Telegram token
		"11",              // Telegram users
		"",                // Discord token: skip (and its users)
		"",                // Slack bot token: skip (and the rest of Slack)
		"",                // users on every platform
		"",                // API host
		"9000",            // API port
		"",                // API key: generate
	}, "\n") + "\n"
	ta := newTestApp(t, nil, answers, true)
	if code := ta.run("gateway", "setup"); code != 0 {
		t.Fatalf("wizard: %d %s\n%s", code, ta.stderr, ta.stdout)
	}
	env, _ := readDotEnv(t, ta.home)
	if env["TELEGRAM_BOT_TOKEN"] != testTelegramToken || env["TELEGRAM_ALLOWED_USERS"] != "11" ||
		env["API_SERVER_PORT"] != "9000" || env["API_SERVER_ENABLED"] != "true" || env["API_SERVER_KEY"] == "" {
		t.Fatalf(".env after the wizard: %v\n%s", env, ta.stdout)
	}
	if _, ok := env["DISCORD_ALLOWED_USERS"]; ok {
		t.Error("a skipped platform's users were asked and saved")
	}
	if strings.Contains(ta.stdout.String(), testTelegramToken) {
		t.Error("the wizard echoed the token")
	}
	if !strings.Contains(ta.stdout.String(), "Slack bot token") || strings.Contains(ta.stdout.String(), "Slack app-level") {
		t.Errorf("slack questions:\n%s", ta.stdout)
	}
}
