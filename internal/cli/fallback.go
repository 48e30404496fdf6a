package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
)

// newFallbackCmd is `hermes fallback list|add|remove|clear` (Hermes
// "cli-commands.md" fallback): it edits fallback_providers in config.yaml,
// the providers a turn continues on when the model call fails in a way a
// retry cannot fix.
func (a *App) newFallbackCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fallback",
		Short: "list and edit the fallback provider chain (fallback_providers in config.yaml)",
		Args:  unknownCommand,
		RunE:  func(*cobra.Command, []string) error { return a.fallbackList() },
	}
	var entry config.FallbackProvider
	add := &cobra.Command{
		Use:   "add PROVIDER MODEL",
		Short: "append a provider and model to the chain",
		Long: "Append {provider, model} to fallback_providers. The key is the provider's own variable\n" +
			"(OPENROUTER_API_KEY, ANTHROPIC_API_KEY, ...) or --key-env; the main model's key is never sent to a fallback.",
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			entry.Provider, entry.Model = args[0], args[1]
			return a.fallbackEdit(func(list []config.FallbackProvider) ([]config.FallbackProvider, error) {
				return append(list, entry), nil
			}, "added "+entry.Label())
		},
	}
	add.Flags().StringVar(&entry.BaseURL, "base-url", "", "endpoint (required for custom; with a preset provider it needs --key-env)")
	add.Flags().StringVar(&entry.KeyEnv, "key-env", "", "environment variable holding this endpoint's key")
	remove := &cobra.Command{
		Use:     "remove N|PROVIDER/MODEL",
		Aliases: []string{"rm"},
		Short:   "remove one entry (its number in `hermes fallback list`, or provider/model)",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.fallbackEdit(func(list []config.FallbackProvider) ([]config.FallbackProvider, error) {
				i, err := fallbackIndex(list, args[0])
				if err != nil {
					return nil, err
				}
				return append(list[:i:i], list[i+1:]...), nil
			}, "removed "+args[0])
		},
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "remove every fallback provider",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.fallbackEdit(func([]config.FallbackProvider) ([]config.FallbackProvider, error) { return nil, nil },
				"cleared the fallback providers")
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "list the fallback providers in the order they are tried", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.fallbackList() },
	}
	cmd.AddCommand(list, add, remove, clear)
	return cmd
}

func (a *App) fallbackList() error {
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	chain := l.Config.Fallbacks()
	if len(chain) == 0 {
		fmt.Fprintln(a.Stdout, "No fallback providers. Add one with `hermes fallback add PROVIDER MODEL`.")
		return nil
	}
	fmt.Fprintf(a.Stdout, "primary: %s/%s\n", orAuto(l.Config.Model.Provider), l.Config.Model.Default)
	for i, f := range chain {
		line := fmt.Sprintf("%d. %s", i+1, f.Label())
		if f.BaseURL != "" {
			line += " at " + f.BaseURL
		}
		if f.KeyEnv != "" {
			line += " (key " + f.KeyEnv + ")"
		}
		fmt.Fprintln(a.Stdout, line)
	}
	return nil
}

// fallbackEdit applies change to the configured chain and saves it.
func (a *App) fallbackEdit(change func([]config.FallbackProvider) ([]config.FallbackProvider, error), done string) error {
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	list, err := change(append([]config.FallbackProvider(nil), l.Config.Fallbacks()...))
	if err != nil {
		return err
	}
	if err := config.SetFallbackProviders(a.Home(), list); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "%s (%d fallback providers)\n", done, len(list))
	return nil
}

// fallbackIndex finds arg (a 1-based number or provider/model) in list.
func fallbackIndex(list []config.FallbackProvider, arg string) (int, error) {
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(list) {
			return 0, fmt.Errorf("no fallback provider number %d: `hermes fallback list` shows %d", n, len(list))
		}
		return n - 1, nil
	}
	for i, f := range list {
		if f.Label() == arg || strings.EqualFold(f.Provider+":"+f.Model, arg) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no fallback provider %q: give its number or provider/model as `hermes fallback list` shows it", arg)
}

func orAuto(provider string) string {
	if provider == "" {
		return "auto"
	}
	return provider
}
