package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/termsafe"
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
	reasoning        string // --reasoning LEVEL (agent.reasoning_effort)
	tui, cli         bool   // --tui / --cli
}

func addChatFlags(cmd *cobra.Command, o *chatOptions, root bool) {
	f := cmd.Flags()
	if root {
		f.StringVarP(&o.oneshotPrompt, "oneshot-prompt", "z", "", "run PROMPT and print only the final answer")
	}
	f.StringVar(&o.usageFile, "usage-file", "", "write token usage JSON to PATH (also on failure)")
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
	addFaceFlags(f, o)
}

func (a *App) newChatCmd() *cobra.Command {
	opts := &chatOptions{}
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "chat with the agent (one turn with -q and -Q/--oneshot, else a REPL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkChatFlags(cmd, opts); err != nil {
				return err
			}
			return a.runChat(cmd.Context(), opts)
		},
	}
	addChatFlags(cmd, opts, false)
	return cmd
}

func (a *App) printVersion() { PrintVersion(a.Stdout, a.Executable) }

// OnlyVersion reports whether args ask for nothing but the version
// (`--version`, `-V` or `version`), so that main can answer them before
// building the command tree or touching the terminal, config or store.
func OnlyVersion(args []string) bool {
	return len(args) == 1 && (args[0] == "--version" || args[0] == "-V" || args[0] == "version")
}

// PrintVersion writes what `hermes --version` prints. The first three
// lines are Hermes Agent's (seed 002 shows "Hermes Agent v0.20.4
// (2026.8.18)", "Install directory: /opt/hermes", "Python: 3.13.5"): the
// version and release date, the install directory (installDir of
// executable) and the language runtime, here Go's version. Then the
// running binary's path and how it was installed (InstallMethod), which
// `hermes update` goes by.
func PrintVersion(w io.Writer, executable string) {
	fmt.Fprintf(w, "Hermes Agent v%s (%s)\n", strings.TrimPrefix(Version, "v"), releaseDateLabel(ReleaseDate))
	fmt.Fprintf(w, "Install directory: %s\n", installDir(executable))
	fmt.Fprintf(w, "Go: %s\n", strings.TrimPrefix(runtime.Version(), "go"))
	fmt.Fprintf(w, "Binary: %s\n", executable)
	fmt.Fprintf(w, "Install method: %s\n", InstallMethod())
}

// installDir is the directory hermes is installed in, as Hermes Agent
// names its own: the prefix whose bin/ holds the binary (/opt/hermes for
// /opt/hermes/bin/hermes, /usr/local for /usr/local/bin/hermes, ~/go for
// go install's ~/go/bin/hermes), else the binary's directory.
func installDir(executable string) string {
	dir := filepath.Dir(executable)
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// releaseDateLabel writes a release date the way Hermes Agent's --version
// does, YYYY.M.D without zero padding (2026.1.5), whether ReleaseDate was set
// as 2026.01.05, 2026-01-05 or 2026.1.5; anything else is shown unchanged.
func releaseDateLabel(date string) string {
	for _, layout := range []string{"2006.1.2", "2006-1-2"} {
		if t, err := time.Parse(layout, date); err == nil {
			return t.Format("2006.1.2")
		}
	}
	return date
}

// checkChatFlags rejects flag values that would otherwise be ignored
// silently: a negative --max-turns, an empty --resume.
func checkChatFlags(cmd *cobra.Command, o *chatOptions) error {
	if o.maxTurns < 0 {
		return fmt.Errorf("--max-turns %d: must be a positive number of tool-calling iterations (or leave it out for agent.max_turns)", o.maxTurns)
	}
	for _, f := range []struct{ name, short, value string }{{"oneshot-prompt", "-z", o.oneshotPrompt}, {"query", "-q", o.query}} {
		// "no prompt: pass -z" was wrong when -z "" was passed.
		if cmd.Flags().Changed(f.name) && strings.TrimSpace(f.value) == "" {
			return fmt.Errorf(`%s %q: the prompt is empty; give the text to answer, e.g. hermes %s "summarise README.md"`, f.short, f.value, f.short)
		}
	}
	if cmd.Flags().Changed("resume") && strings.TrimSpace(o.resume) == "" {
		return errors.New(`--resume "": give a session id, id prefix or title (see hermes sessions list), or use -c for the latest`)
	}
	// Checked before the run: the report is written after the model was
	// paid for, and "rename /tmp/.x.tmp123 x: file exists" said nothing.
	if st, err := os.Stat(o.usageFile); o.usageFile != "" && err == nil && st.IsDir() {
		return fmt.Errorf("--usage-file %s is a directory; give a file path, e.g. %s", o.usageFile, filepath.Join(o.usageFile, "usage.json"))
	}
	return nil
}

// runChat is `hermes chat` and bare `hermes`: one turn for -z, -q with
// -Q/--oneshot or a non-terminal, else the REPL.
func (a *App) runChat(ctx context.Context, o *chatOptions) (err error) {
	if err := a.checkFaceFlags(o); err != nil {
		return err
	}
	text, err := a.resolvePrompt(o)
	if err != nil {
		return err
	}
	a.oneShotGC(o, text)
	quiet := o.quiet || o.oneshotPrompt != ""
	r := &renderer{out: a.Stdout, diag: a.Stderr, quiet: quiet, verbose: o.verbose}
	if a.StdoutTerminal {
		r.safe = &termsafe.Stream{}
	}

	var (
		rt     *chatRuntime
		result agent.TurnResult
	)
	if o.usageFile != "" {
		defer func() {
			model, prov, sid := o.model, o.provider, ""
			if rt != nil {
				model, prov = rt.rt.Model(), rt.rt.ProviderName()
				if rt.session != nil {
					sid = rt.session.ID()
				}
			}
			rep := newUsageReport(result.Usage, result.APICalls, model, prov, sid, err, errors.Is(err, agent.ErrCancelled))
			if werr := writeJSONFile(o.usageFile, rep); werr != nil {
				fmt.Fprintf(a.Stderr, "hermes: writing --usage-file %s: %v\n", o.usageFile, werr)
			}
		}()
	}

	rt, err = a.newRuntime(ctx, o, r, true)
	if err != nil {
		return err
	}
	defer rt.Close()
	// Registered after the usage-file writer, so it runs first: neither the
	// printed error nor the usage file may carry a secret a provider echoed.
	defer func() { err = rt.redact.RedactError(err) }()

	// Hermes v0.21: -q on a terminal is turn 1 of an interactive session;
	// with -Q, --oneshot, -z or non-terminal stdio it answers and exits.
	finite := o.quiet || o.oneshot || o.oneshotPrompt != "" || !a.IsTerminal
	if text == "" && !a.IsTerminal {
		return errors.New("no prompt: pass -q \"...\", -z \"...\" or --query-file PATH (stdin is not a terminal, so no REPL)")
	}
	interactive := !finite || text == ""
	source := "cli"
	if !interactive {
		source = "oneshot"
	}
	if text != "" {
		// Before the session exists: an unknown skill name must not leave an
		// empty session behind for -c to pick up.
		if text, err = rt.withPreloadedSkills(text); err != nil {
			return err
		}
	}
	if err := rt.openSession(ctx, source); err != nil {
		return err
	}
	if interactive {
		if a.useTUI(o) {
			return a.runTUI(ctx, rt, text)
		}
		return a.repl(ctx, rt, text)
	}
	result, err = rt.runTurn(ctx, text, nil)
	if err != nil {
		return a.turnError(ctx, err)
	}
	r.finish(result.Text)
	if err := stoppedError(result, rt.session.MaxTurns()); err != nil {
		return err
	}
	rt.review(ctx, result)
	return nil
}

// oneShotGCPercent is the collector's GOGC for a run that answers one
// prompt and exits. Such a run allocates a few MB that stay mostly live
// until it exits (config, tool specs, the request and the session store),
// so with the default 100 it collected once, at the 4 MB heap goal, for
// nothing: ~2 ms of a one-tool turn's ~30 ms of CPU. With 400 the first
// goal is 16 MB, which a one-shot turn does not reach; a run that grows
// past it is collected as usual, with a heap goal 5× the live heap
// instead of 2×.
const oneShotGCPercent = 400

// oneShotGC raises the collector's GOGC for a one-shot run (-z, -q with
// -Q/--oneshot, or a prompt with stdio not a terminal), unless GOGC is set
// in the environment.
func (a *App) oneShotGC(o *chatOptions, text string) {
	oneShot := text != "" && (o.quiet || o.oneshot || o.oneshotPrompt != "" || !a.IsTerminal)
	if oneShot && a.SetGCPercent != nil && a.Getenv("GOGC") == "" {
		a.SetGCPercent(oneShotGCPercent)
	}
}

// stoppedError turns a turn that ended without a normal answer into a
// failed run (exit 1), so scripts can tell: the same tool call kept
// failing, or the turn budget ran out and the wrap-up call gave no text.
func stoppedError(res agent.TurnResult, maxTurns int) error {
	switch {
	case res.Stopped == "repeated_failure":
		return &ExitError{Code: 1, Err: errors.New("the turn was stopped because the same tool call kept failing")}
	case res.Stopped == "max_turns" && strings.TrimSpace(res.Text) == "":
		return &ExitError{Code: 1, Err: fmt.Errorf("the turn budget (%d tool-calling iterations; --max-turns or agent.max_turns) ran out before a final answer", maxTurns)}
	}
	return nil
}

// resolvePrompt returns the prompt of -z, -q or --query-file ("" = none).
func (a *App) resolvePrompt(o *chatOptions) (string, error) {
	set := 0
	for _, v := range []string{o.oneshotPrompt, o.query, o.queryFile} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return "", errors.New("-z, -q/--query and --query-file are mutually exclusive: pass only one")
	}
	switch {
	case o.oneshotPrompt != "":
		return nonEmptyPrompt(o.oneshotPrompt, "-z")
	case o.query != "":
		return nonEmptyPrompt(o.query, "-q")
	case o.queryFile == "-":
		b, err := io.ReadAll(a.Stdin)
		if err != nil {
			return "", fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		return nonEmptyPrompt(string(b), "stdin")
	case o.queryFile != "":
		b, err := os.ReadFile(o.queryFile)
		if err != nil {
			return "", fmt.Errorf("--query-file: %w", err)
		}
		return nonEmptyPrompt(string(b), o.queryFile)
	}
	return "", nil
}

func nonEmptyPrompt(s, from string) (string, error) {
	// (also used for -q and -z: a blank prompt is a mistake, not a question)
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("the prompt read from %s is empty", from)
	}
	return s, nil
}

// turnError maps a failed turn to the process exit: 128+signal for an
// interrupt (130 for Ctrl-C, 143 for SIGTERM), 1 with the provider's message
// otherwise.
func (a *App) turnError(ctx context.Context, err error) error {
	if errors.Is(err, agent.ErrCancelled) {
		fmt.Fprintln(a.Stderr, "hermes: interrupted; the session is saved and can be resumed with -c")
		code := 130
		var sig SignalError
		if errors.As(context.Cause(ctx), &sig) {
			code = 128 + int(sig.Signal)
		}
		return &ExitError{Code: code, Err: err, Silent: true}
	}
	return &ExitError{Code: 1, Err: err}
}
