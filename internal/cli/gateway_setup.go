package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// gatewaySetting is one HERMES_HOME/.env variable `hermes gateway setup`
// writes.
type gatewaySetting struct {
	flag, env, label string
	secret           bool
	// platform groups the wizard's questions: the rest of a platform is
	// asked only when its first setting (the token) is given.
	platform string
	check    func(string) (string, error)
}

var (
	telegramToken = lazyregexp.New(`^[0-9]+:[A-Za-z0-9_-]{20,}$`)
	userIDs       = lazyregexp.New(`^[A-Za-z0-9_]+$`)
)

func gatewaySettings() []gatewaySetting {
	users := func(numeric bool) func(string) (string, error) {
		return func(v string) (string, error) { return checkUserList(v, numeric) }
	}
	return []gatewaySetting{
		{"telegram-token", "TELEGRAM_BOT_TOKEN", "Telegram bot token (from @BotFather)", true, "telegram", checkTelegramToken},
		{"telegram-allowed-users", "TELEGRAM_ALLOWED_USERS", "Telegram user ids allowed to use the agent (comma-separated)", false, "telegram", users(true)},
		{"discord-token", "DISCORD_BOT_TOKEN", "Discord bot token", true, "discord", checkToken("", "DISCORD_BOT_TOKEN")},
		{"discord-allowed-users", "DISCORD_ALLOWED_USERS", "Discord user ids allowed (comma-separated)", false, "discord", users(true)},
		{"slack-bot-token", "SLACK_BOT_TOKEN", "Slack bot token (xoxb-...)", true, "slack", checkToken("xoxb-", "SLACK_BOT_TOKEN")},
		{"slack-app-token", "SLACK_APP_TOKEN", "Slack app-level token for Socket Mode (xapp-...)", true, "slack", checkToken("xapp-", "SLACK_APP_TOKEN")},
		{"slack-allowed-users", "SLACK_ALLOWED_USERS", "Slack member ids allowed (comma-separated, U...)", false, "slack", users(false)},
		{"allowed-users", "GATEWAY_ALLOWED_USERS", "user ids allowed on every platform (comma-separated)", false, "", users(false)},
		{"api-server-host", "API_SERVER_HOST", "API server bind address", false, "api", checkHost},
		{"api-server-port", "API_SERVER_PORT", "API server port", false, "api", checkPort},
		{"api-server-key", "API_SERVER_KEY", "API server key (empty: generate one)", true, "api", checkToken("", "API_SERVER_KEY")},
	}
}

func checkTelegramToken(v string) (string, error) {
	if !telegramToken().MatchString(v) {
		return "", errors.New("TELEGRAM_BOT_TOKEN does not look like a bot token (digits:secret, from @BotFather)")
	}
	return v, nil
}

func checkToken(prefix, name string) func(string) (string, error) {
	return func(v string) (string, error) {
		if strings.ContainsAny(v, " \t\r\n") || len(v) < 8 || !strings.HasPrefix(v, prefix) {
			if prefix != "" {
				return "", fmt.Errorf("%s must start with %s and hold no spaces", name, prefix)
			}
			return "", fmt.Errorf("%s must be at least 8 characters without spaces", name)
		}
		return v, nil
	}
}

func checkUserList(v string, numeric bool) (string, error) {
	var ids []string
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if _, err := strconv.ParseUint(f, 10, 64); numeric && err != nil || !userIDs().MatchString(f) {
			return "", fmt.Errorf("%q is not a user id (comma-separated ids, e.g. 123456789,987654321)", f)
		}
		ids = append(ids, f)
	}
	return strings.Join(ids, ","), nil
}

func checkHost(v string) (string, error) {
	if v != "localhost" && net.ParseIP(v) == nil {
		return "", fmt.Errorf("API_SERVER_HOST %q is not an IP address (127.0.0.1, 0.0.0.0 ...)", v)
	}
	return v, nil
}

func checkPort(v string) (string, error) {
	if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("API_SERVER_PORT %q is not a port number (1-65535)", v)
	}
	return v, nil
}

// newGatewaySetupCmd is `hermes gateway setup`: platform keys, allowed
// users and the API server into HERMES_HOME/.env (0600, atomic, through
// config.Set). Tokens are read without echo and never printed.
func (a *App) newGatewaySetupCmd() *cobra.Command {
	var nonInteractive, apiServer, allowAll bool
	values := map[string]*string{}
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "save chat platform tokens, allowed users and API server settings in HERMES_HOME/.env",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			given := map[string]string{}
			for flag, v := range values {
				if cmd.Flags().Changed(flag) {
					given[flag] = *v
				}
			}
			if cmd.Flags().Changed("api-server") {
				given["api-server"] = strconv.FormatBool(apiServer)
			}
			if cmd.Flags().Changed("allow-all-users") {
				given["allow-all-users"] = strconv.FormatBool(allowAll)
			}
			interactive := a.IsTerminal && !nonInteractive
			if !interactive && len(given) == 0 {
				return errors.New("nothing to set: pass --telegram-token, --discord-token, --slack-bot-token/--slack-app-token, " +
					"--*-allowed-users or --api-server (see `hermes gateway setup --help`); a token given as - is read from stdin")
			}
			return a.setupGateway(given, interactive)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&nonInteractive, "non-interactive", false, "never prompt; take every value from flags")
	for _, s := range gatewaySettings() {
		help := s.label + " (" + s.env + ")"
		if s.secret {
			help += "; - reads it from stdin"
		}
		values[s.flag] = f.String(s.flag, "", help)
	}
	f.BoolVar(&apiServer, "api-server", false, "enable the OpenAI-compatible API server (API_SERVER_ENABLED)")
	f.BoolVar(&allowAll, "allow-all-users", false, "let anyone talk to the agent (GATEWAY_ALLOW_ALL_USERS; not recommended)")
	return cmd
}

// setupGateway validates the given values, asks for the rest when
// interactive, then writes them all (nothing is written when one is bad).
func (a *App) setupGateway(given map[string]string, interactive bool) error {
	home := a.Home()
	in := newLineReader(a.Stdin)
	writes := map[string]string{}
	var order []string
	put := func(env, v string) {
		if _, ok := writes[env]; !ok {
			order = append(order, env)
		}
		writes[env] = v
	}
	skipped := map[string]bool{}
	enableAPI := given["api-server"] == "true"
	if interactive && given["api-server"] == "" {
		ans, err := a.ask(in, "Enable the OpenAI-compatible API server? (y/N)", "n")
		if err != nil {
			return err
		}
		enableAPI = strings.HasPrefix(strings.ToLower(ans), "y")
	}
	if given["api-server"] != "" || interactive {
		put("API_SERVER_ENABLED", strconv.FormatBool(enableAPI))
	}
	for _, s := range gatewaySettings() {
		v, ok := given[s.flag]
		if ok && v == "-" && s.secret {
			var err error
			if v, err = in.line(); err != nil {
				return fmt.Errorf("--%s -: reading %s from stdin: %w", s.flag, s.env, err)
			}
			v = strings.TrimSpace(v)
		}
		switch {
		case ok:
		case !interactive || skipped[s.platform] || s.platform == "api" && !enableAPI:
			continue
		default:
			var err error
			if v, err = a.askGateway(in, s); err != nil {
				return err
			}
			if v == "" {
				skipped[s.platform] = s.secret && s.platform != "api" // no token: skip the platform's other questions
				continue
			}
		}
		norm, err := s.check(strings.TrimSpace(v))
		if err != nil {
			return err
		}
		put(s.env, norm)
	}
	if v, ok := given["allow-all-users"]; ok {
		put("GATEWAY_ALLOW_ALL_USERS", v)
	}
	if enableAPI {
		if err := a.apiServerKey(home, writes, put); err != nil {
			return err
		}
	}
	secret := map[string]bool{}
	for _, s := range gatewaySettings() {
		secret[s.env] = s.secret
	}
	for _, env := range order {
		if err := config.Set(home, env, writes[env]); err != nil {
			return err
		}
		shown := writes[env]
		if secret[env] || config.IsSecretKey(env) {
			shown = config.MaskSecret(shown)
		}
		fmt.Fprintf(a.Stdout, "Set %s = %s\n", env, shown)
	}
	fmt.Fprintf(a.Stdout, "Saved to %s (mode 0600). Start the gateway with `hermes gateway start`.\n", config.DotEnvPath(home))
	return nil
}

// askGateway asks one setting (secrets without echo), until it validates
// or is left empty (three tries).
func (a *App) askGateway(in *lineReader, s gatewaySetting) (string, error) {
	for range 3 {
		var v string
		var err error
		if s.secret {
			v, err = a.readSecret(in, s.label+" (empty to skip): ")
		} else {
			v, err = a.ask(in, s.label+" (empty to skip)", "")
		}
		if err != nil || v == "" {
			return v, err
		}
		if _, err := s.check(v); err != nil {
			fmt.Fprintln(a.Stdout, err)
			continue
		}
		return v, nil
	}
	return "", fmt.Errorf("no valid value for %s", s.env)
}

// apiServerKey makes sure an enabled API server has a key: one given now,
// one already in .env, else a generated 32-byte key (saved, not printed).
func (a *App) apiServerKey(home string, writes map[string]string, put func(string, string)) error {
	if writes["API_SERVER_KEY"] != "" {
		return nil
	}
	l, err := config.Load(home, config.LoadOptions{Getenv: a.Getenv})
	if err == nil && l.Getenv("API_SERVER_KEY") != "" {
		return nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	put("API_SERVER_KEY", "hermes-"+hex.EncodeToString(b[:]))
	fmt.Fprintf(a.Stdout, "Generated an API_SERVER_KEY; clients send it as `Authorization: Bearer <key>` (it is in %s).\n", config.DotEnvPath(home))
	return nil
}
