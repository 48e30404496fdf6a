package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// chatOptions are the flags of `hermes chat` (and of bare `hermes`).
type chatOptions struct {
	query            string
	queryFile        string
	oneshotPrompt    string // -z
	usageFile        string
	quiet            bool
	oneshot          bool
	model            string
	provider         string
	baseURL          string
	toolsets         []string
	skills           []string
	maxTurns         int
	yolo             bool
	continueLast     bool
	resume           string
	ignoreUserConfig bool
	ignoreRules      bool
	safeMode         bool
	record           string
	replay           string
	verbose          bool
}

func addChatFlags(cmd *cobra.Command, o *chatOptions, root bool) {
	f := cmd.Flags()
	if root {
		f.StringVarP(&o.oneshotPrompt, "oneshot-prompt", "z", "", "run PROMPT and print only the final answer")
		f.StringVar(&o.usageFile, "usage-file", "", "write token usage JSON to PATH (also on failure)")
	}
	f.StringVarP(&o.query, "query", "q", "", "prompt to answer")
	f.StringVar(&o.queryFile, "query-file", "", "read the prompt from PATH (- for stdin)")
	f.BoolVarP(&o.quiet, "quiet", "Q", false, "only the final answer on stdout")
	f.BoolVar(&o.oneshot, "oneshot", false, "answer and exit")
	f.StringVarP(&o.model, "model", "m", "", "model id")
	f.StringVar(&o.provider, "provider", "", "provider: openrouter, openai, anthropic, custom, replay")
	f.StringVar(&o.baseURL, "base-url", "", "override the provider's base URL")
	f.StringSliceVarP(&o.toolsets, "toolsets", "t", nil, "enable only these toolsets (comma-separated)")
	f.StringSliceVarP(&o.skills, "skills", "s", nil, "preload these skills (comma-separated or repeated)")
	f.IntVar(&o.maxTurns, "max-turns", 0, "maximum tool-calling iterations per turn")
	f.BoolVar(&o.yolo, "yolo", false, "skip dangerous-command approvals (the hardline list still applies)")
	f.BoolVarP(&o.continueLast, "continue", "c", false, "continue the most recent session")
	f.StringVarP(&o.resume, "resume", "r", "", "resume a session by id, id prefix or title")
	f.BoolVar(&o.ignoreUserConfig, "ignore-user-config", false, "ignore config.yaml (.env is still read)")
	f.BoolVar(&o.ignoreRules, "ignore-rules", false, "skip project context files, SOUL.md, memory and preloaded skills")
	f.BoolVar(&o.safeMode, "safe-mode", false, "disable all customization (implies --ignore-user-config --ignore-rules)")
	f.StringVar(&o.record, "record", "", "record the model traffic of this run to FILE")
	f.StringVar(&o.replay, "replay", "", "with --provider replay: the recording to play back")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "verbose diagnostics on stderr")
}

func (a *App) newChatCmd() *cobra.Command {
	opts := &chatOptions{}
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "chat with the agent (one turn with -q and -Q/--oneshot, else a REPL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runChat(cmd.Context(), opts)
		},
	}
	addChatFlags(cmd, opts, false)
	return cmd
}

func (a *App) printVersion() {
	fmt.Fprintf(a.Stdout, "Hermes Agent v%s (%s)\n", Version, ReleaseDate)
	fmt.Fprintf(a.Stdout, "Install directory: %s\n", a.Executable)
	fmt.Fprintf(a.Stdout, "Go: %s\n", runtime.Version())
}

func (a *App) runChat(ctx context.Context, o *chatOptions) error {
	return fmt.Errorf("chat is not wired yet")
}
