package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v4"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/tool"
)

// newConfigCmd is `hermes config show|get|set|unset|path|env-path|check`
// (Hermes "cli-commands.md" `hermes config`). Bare `hermes config` shows the
// effective configuration. Secret values are always masked.
func (a *App) newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "show and edit config.yaml and .env",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.configShow() },
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "show",
			Short: "print the effective configuration (secrets masked) and where values come from",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return a.configShow() },
		},
		&cobra.Command{
			Use:   "get KEY",
			Short: "print one value: a dotted key (terminal.timeout) or a variable (OPENAI_API_KEY, masked)",
			Args:  cobra.ExactArgs(1),
			RunE:  func(_ *cobra.Command, args []string) error { return a.configGet(args[0]) },
		},
		a.newConfigSetCmd(),
		&cobra.Command{
			Use:   "unset KEY",
			Short: "remove a key from config.yaml (or a variable from .env) so the default applies",
			Args:  cobra.ExactArgs(1),
			RunE:  func(_ *cobra.Command, args []string) error { return a.configUnset(args[0]) },
		},
		&cobra.Command{
			Use:   "path",
			Short: "print the path of config.yaml",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				_, err := fmt.Fprintln(a.Stdout, config.ConfigPath(a.Home()))
				return err
			},
		},
		&cobra.Command{
			Use:   "env-path",
			Short: "print the path of .env",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				_, err := fmt.Fprintln(a.Stdout, config.DotEnvPath(a.Home()))
				return err
			},
		},
		&cobra.Command{
			Use:   "check",
			Short: "validate config.yaml and .env; exit 1 when something must be fixed",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return a.configCheck() },
		},
	)
	return cmd
}

// newConfigSetCmd is `hermes config set KEY [VALUE]`. Flag parsing is off
// so that a VALUE starting with '-' (agent.max_turns -3, a prompt such as
// "-be terse") reaches validation as a value instead of failing as an
// unknown flag; -h/--help as the first argument or as the only VALUE still
// shows the usage (set a literal "--help" with KEY -- --help), and a "--"
// right after KEY is dropped.
func (a *App) newConfigSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set KEY [VALUE]",
		Short: "save a value: API keys and other variables to .env, the rest to config.yaml",
		Long: "Save a value. KEY is a dotted config key (terminal.timeout) or an environment variable\n" +
			"(OPENAI_API_KEY). Variables and secrets go to HERMES_HOME/.env (mode 0600), everything else\n" +
			"to config.yaml, keeping its comments. VALUE is parsed as YAML: 300 is a number, [a, b] a list.\n" +
			"Keys with a fixed set of values (terminal.backend, approvals.mode, model.provider, ...) refuse\n" +
			"others; numbers must not be negative. Leave VALUE out for a secret to type it without echo.",
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			isHelp := func(s string) bool { return s == "-h" || s == "--help" }
			if len(args) > 0 && isHelp(args[0]) || len(args) == 2 && isHelp(args[1]) {
				return cmd.Help()
			}
			if len(args) == 0 {
				return fmt.Errorf("missing KEY: usage: %s", cmd.UseLine())
			}
			rest := args[1:]
			if len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
			}
			return a.configSet(args[0], rest)
		},
	}
}

// checkToolsetsValue refuses a `config set toolsets VALUE` naming a toolset
// this build does not know (a list "[file, terminal]" or "file,terminal").
func checkToolsetsValue(value string) error {
	var names []string
	for _, n := range strings.Split(strings.Trim(strings.TrimSpace(value), "[]"), ",") {
		if n = strings.Trim(strings.TrimSpace(n), `"'`); n != "" {
			names = append(names, n)
		}
	}
	reg := toolCatalog()
	if unknown, _ := reg.CheckToolsets(names); len(unknown) > 0 {
		return fmt.Errorf("toolsets: unknown toolset %s; available: %s", strings.Join(unknown, ", "), strings.Join(reg.Toolsets(), ", "))
	}
	return nil
}

// loadConfig loads HERMES_HOME's configuration and prints its warnings to
// stderr.
func (a *App) loadConfig() (*config.Loaded, error) {
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return nil, err
	}
	for _, w := range l.Warnings {
		fmt.Fprintln(a.Stderr, "hermes: warning:", w)
	}
	return l, nil
}

func (a *App) configShow() error {
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	out, err := yaml.Dump(l.Masked(), yaml.WithIndent(2))
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "# %s (defaults < environment and .env < config.yaml; secrets masked)\n", l.Path)
	fmt.Fprintf(a.Stdout, "# 0 or '' means the built-in default, e.g. model.request_timeout %d s, model.stream_idle_timeout %d s,\n"+
		"# agent.max_turns %d; model.context_length is looked up for the model, model.max_tokens is the provider's default\n",
		int(llm.DefaultRequestTimeout.Seconds()), int(llm.DefaultStreamIdleTimeout.Seconds()), agent.DefaultMaxTurns)
	a.Stdout.Write(out)
	var overridden []string
	for _, k := range config.Keys() {
		if src := l.Source(k); src != config.SourceDefault && src != config.SourceConfig {
			overridden = append(overridden, fmt.Sprintf("#   %s from %s", k, src))
		}
	}
	if len(overridden) > 0 {
		fmt.Fprintln(a.Stdout, "# set by the environment:")
		fmt.Fprintln(a.Stdout, strings.Join(overridden, "\n"))
	}
	vars := a.knownVariables(l)
	if len(vars) > 0 {
		fmt.Fprintf(a.Stdout, "\n# variables (%s and the process environment)\n", l.DotEnvPath)
		for _, v := range vars {
			fmt.Fprintln(a.Stdout, v)
		}
	}
	return nil
}

// knownVariables lists the .env variables and the provider key variables
// of the process environment as "NAME=value  # source", secrets masked.
func (a *App) knownVariables(l *config.Loaded) []string {
	names := map[string]bool{}
	for k := range l.DotEnv {
		names[k] = true
	}
	for _, p := range config.Providers() {
		for _, k := range config.ProviderKeyEnv(p) {
			if a.Getenv(k) != "" {
				names[k] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []string
	for _, k := range sorted {
		src := ".env"
		if a.Getenv(k) != "" {
			src = "environment"
		}
		out = append(out, fmt.Sprintf("%s=%s  # %s", k, displayValue(k, l.Getenv(k)), src))
	}
	return out
}

// displayValue masks v when key names a secret.
func displayValue(key, v string) string {
	if config.IsSecretKey(key) {
		return config.MaskSecret(v)
	}
	return v
}

func (a *App) configGet(key string) error {
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	v, err := config.Get(l, key)
	if err != nil {
		return err
	}
	if config.IsEnvKey(key) && v == "" {
		return &ExitError{Code: 1, Err: fmt.Errorf("%s is not set in the environment or %s", key, l.DotEnvPath)}
	}
	switch x := v.(type) {
	case nil:
		fmt.Fprintln(a.Stdout, "null")
	case string:
		fmt.Fprintln(a.Stdout, displayValue(key, x))
	default:
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Struct || rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map {
			if rv.Kind() == reflect.Struct {
				// Mask secrets inside a section (e.g. `config get model`).
				m := l.Masked()
				v, _ = config.Get(&config.Loaded{Config: m}, key)
			}
			out, err := yaml.Dump(v, yaml.WithIndent(2))
			if err != nil {
				return err
			}
			a.Stdout.Write(out)
			return nil
		}
		fmt.Fprintln(a.Stdout, v)
	}
	return nil
}

func (a *App) configSet(key string, rest []string) error {
	home := a.Home()
	var value string
	if len(rest) == 0 {
		if !config.IsSecretKey(key) {
			return fmt.Errorf("missing VALUE: hermes config set %s VALUE", key)
		}
		v, err := a.readSecret(newLineReader(a.Stdin), key+" (input hidden): ")
		if err != nil {
			return err
		}
		value = v
	} else {
		value = strings.Join(rest, " ")
	}
	if key == "toolsets" {
		if err := checkToolsetsValue(value); err != nil {
			return err
		}
	}
	// An absolute terminal.cwd that is not a directory failed every later
	// run; a relative one is resolved against the directory of each run.
	if key == "terminal.cwd" && filepath.IsAbs(value) {
		if st, err := os.Stat(value); err != nil || !st.IsDir() {
			return fmt.Errorf("terminal.cwd: %s is not a directory; create it first or give an existing directory", value)
		}
	}
	pairNote, err := a.checkVercelSize(key, value)
	if err != nil {
		return err
	}
	if err := config.Set(home, key, value); err != nil {
		return err
	}
	defer func() {
		if pairNote != "" {
			fmt.Fprintln(a.Stderr, "hermes: note:", pairNote)
		}
	}()
	switch {
	case config.IsEnvKey(key):
		fmt.Fprintf(a.Stdout, "Saved %s=%s to %s\n", key, displayValue(key, value), config.DotEnvPath(home))
	case config.IsSecretKey(key) && value != "" && !strings.HasPrefix(value, "${"):
		name := config.SecretEnvName(key)
		fmt.Fprintf(a.Stdout, "Saved %s (%s) to %s as %s; %s refers to ${%s}\n", key, config.MaskSecret(value),
			config.DotEnvPath(home), name, config.ConfigPath(home), name)
	default:
		fmt.Fprintf(a.Stdout, "Set %s = %s in %s\n", key, value, config.ConfigPath(home))
	}
	return nil
}

// configUnset removes key; a key that is not set is reported as such (exit
// 0, no file written). A secret config key also loses its .env variable.
func (a *App) configUnset(key string) error {
	home := a.Home()
	removed, err := config.UnsetKey(home, key)
	if err != nil {
		return err
	}
	if !removed {
		fmt.Fprintf(a.Stdout, "%s is not set\n", key)
		return nil
	}
	switch {
	case config.IsSection(key):
		fmt.Fprintf(a.Stdout, "Removed section %s (all its keys, and the .env variables of its secrets) from %s\n", key, config.ConfigPath(home))
	case config.IsEnvKey(key):
		fmt.Fprintf(a.Stdout, "Removed %s from %s\n", key, config.DotEnvPath(home))
	case config.IsSecretKey(key):
		fmt.Fprintf(a.Stdout, "Removed %s from %s and %s from %s\n", key, config.ConfigPath(home),
			config.SecretEnvName(key), config.DotEnvPath(home))
	default:
		fmt.Fprintf(a.Stdout, "Removed %s from %s\n", key, config.ConfigPath(home))
	}
	return nil
}

func (a *App) configCheck() error {
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	problems := l.Problems()
	if err := session.CheckToolsetKeys(toolCatalog(), &l.Config); err != nil {
		problems = append(problems, err.Error())
	}
	// An unknown key is a problem here, listed once (not also as a warning).
	for _, w := range l.Warnings {
		if l.IsUnknownKeyWarning(w) {
			problems = append(problems, strings.TrimSuffix(w, "; ignored")+"; remove it or fix its spelling")
		} else {
			fmt.Fprintln(a.Stderr, "hermes: warning:", w)
		}
	}
	for _, p := range problems {
		fmt.Fprintln(a.Stdout, "problem:", p)
	}
	if len(problems) > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d problem(s) in the configuration", len(problems))}
	}
	fmt.Fprintf(a.Stdout, "config OK: %s\n", l.Path)
	return nil
}

// toolCatalog is every tool of this build without live dependencies: only
// its names and toolsets are used (to validate `toolsets`). Keep it in step
// with the registry newRuntime builds.
func toolCatalog() *tool.Registry {
	fileOpts := tool.FileToolOptions{}
	return tool.NewRegistry(
		tool.NewTerminalTool(tool.TerminalOptions{}), tool.NewProcessTool(nil, nil, nil),
		tool.NewReadFileTool(fileOpts), tool.NewWriteFileTool(fileOpts), tool.NewPatchTool(fileOpts),
		tool.NewSearchFilesTool(fileOpts), tool.NewSessionSearch(nil),
		tool.NewSkillsList(nil), tool.NewSkillView(nil), tool.NewSkillManage(nil),
		tool.NewTodoList(), tool.NewMemory(nil),
	)
}
