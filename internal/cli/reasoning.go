package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// reasoningKey is the config key --reasoning overrides.
const reasoningKey = "agent.reasoning_effort"

// reasoningLevels are the values of --reasoning and agent.reasoning_effort
// (Hermes "configuration.md" agent.reasoning_effort). How each reaches the
// wire: OpenAI reasoning_effort, OpenRouter reasoning.effort, Anthropic an
// extended-thinking budget_tokens (anthropic.ThinkingBudget; none = off).
func reasoningLevels() []string {
	return []string{"none", "minimal", "low", "medium", "high", "xhigh"}
}

// addFaceFlags adds --reasoning, --tui and --cli to a chat command.
func addFaceFlags(f *pflag.FlagSet, o *chatOptions) {
	f.StringVar(&o.reasoning, "reasoning", "", "reasoning effort: "+strings.Join(reasoningLevels(), ", ")+" (agent.reasoning_effort)")
	f.BoolVar(&o.tui, "tui", false, "terminal UI (the default on a terminal)")
	f.BoolVar(&o.cli, "cli", false, "plain line interface")
}

// checkFaceFlags validates --reasoning and --tui/--cli. --tui is the
// default face on a terminal; a one-shot run (-Q, -z, non-terminal stdio)
// has no face, so both flags change nothing there.
func (a *App) checkFaceFlags(o *chatOptions) error {
	if o.reasoning != "" && !slices.Contains(reasoningLevels(), o.reasoning) {
		return fmt.Errorf("--reasoning %q: use one of %s", o.reasoning, strings.Join(reasoningLevels(), ", "))
	}
	if o.tui && o.cli {
		return fmt.Errorf("--tui and --cli are mutually exclusive: pass only one")
	}
	return nil
}

// reasoningNotice tells the user when the provider has no way to take the
// reasoning effort (custom OpenAI-compatible endpoints, replay), so the
// setting is not silently dropped.
func (a *App) reasoningNotice(provider, effort string) {
	if effort == "" || effort == "none" {
		return
	}
	switch provider {
	case "openai", "openrouter", "anthropic":
		return
	}
	fmt.Fprintf(a.Stderr, "hermes: notice: reasoning effort %q is not sent to provider %s (it has no reasoning setting)\n", effort, provider)
}
