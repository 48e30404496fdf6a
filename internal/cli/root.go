// Package cli implements the hermes command line: the root command (bare
// `hermes` is interactive chat, `hermes -z` a scripted one-shot) and one file
// per subcommand, with the names and flags of Hermes Agent
// ("cli-commands.md").
package cli

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
)

// Version and ReleaseDate identify this build; set with -ldflags -X.
var (
	Version     = "0.21.0"
	ReleaseDate = "2026.11.30"
)

// App carries the process's dependencies so that commands can be run from
// tests without touching the real terminal or environment.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv looks up an environment variable (os.Getenv in production).
	Getenv func(string) string
	// Environ is the full environment (os.Environ in production).
	Environ func() []string
	// Now is the clock.
	Now func() time.Time
	// IsTerminal reports whether stdin and stdout are a terminal.
	IsTerminal bool
	// StdoutTerminal reports whether stdout is a terminal (isatty): the
	// model's text is then written with control sequences neutralised.
	StdoutTerminal bool
	// Executable is the path of the running binary (for box init re-exec).
	Executable string
	// SetGCPercent is debug.SetGCPercent in production; nil (tests) leaves
	// the collector alone. See oneShotGCPercent.
	SetGCPercent func(int) int
}

// NewApp returns an App wired to the real process.
func NewApp() *App {
	exe, _ := os.Executable()
	return &App{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Now: time.Now,
		IsTerminal:     isTerminal(os.Stdin) && isTerminal(os.Stdout),
		StdoutTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		Executable:     exe,
		SetGCPercent:   debug.SetGCPercent,
	}
}

// isTerminal reports whether f is a terminal (isatty: the TCGETS ioctl
// succeeds). Any other character device, /dev/null included, is not.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Home is HERMES_HOME for this app.
func (a *App) Home() string { return config.Home(a.Getenv) }

// ExitError carries a process exit code; its message has already been printed
// when Silent is set.
type ExitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Run executes the command line args and returns the process exit code.
// Errors are printed to Stderr as one line prefixed "hermes: ", never as a
// stack trace.
func (a *App) Run(ctx context.Context, args []string) int {
	createHome(a.Home())
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if !ee.Silent && ee.Err != nil {
			fmt.Fprintln(a.Stderr, errorLine(ee.Err))
		}
		return ee.Code
	}
	fmt.Fprintln(a.Stderr, errorLine(err))
	return 1
}

// createHome makes HERMES_HOME, when it does not exist yet and its parent
// does, readable by its owner alone (0700): it holds .env, sessions, the
// image store. The many MkdirAlls below it would otherwise make it 0755.
// An existing home keeps its mode (hermes doctor reports a writable one).
func createHome(home string) {
	if home != "" {
		os.Mkdir(home, 0o700) // exists already, or no parent: the commands report what they need
	}
}

// errorLine is the line Run prints for err: "hermes: " and its message
// with controls escaped, the program named once even when the message
// already starts with it ("hermes sandbox serve: listen ..." was printed
// "hermes: hermes sandbox serve: listen ...").
func errorLine(err error) string {
	msg := escapeControls(err.Error())
	for _, p := range []string{"hermes: ", "hermes:", "hermes "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			msg = rest
			break
		}
	}
	return "hermes: " + msg
}

// escapeControls writes the control characters of an error message other
// than newline and tab as Go escapes (\x1b, \r, \u009b): a file or task
// name in an error cannot move the cursor or rewrite what the terminal
// shows.
func escapeControls(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (a *App) newRootCmd() *cobra.Command {
	var showVersion bool
	opts := &chatOptions{}
	root := &cobra.Command{
		Use:           "hermes",
		Short:         "Hermes: a model-agnostic terminal agent with its own sandbox",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				a.printVersion()
				return nil
			}
			if err := checkChatFlags(cmd, opts); err != nil {
				return err
			}
			return a.runChat(cmd.Context(), opts)
		},
	}
	root.Flags().BoolVarP(&showVersion, "version", "V", false, "print the version and exit")
	addChatFlags(root, opts, true)
	root.AddCommand(
		a.newChatCmd(),
		a.newModelCmd(),
		a.newConfigCmd(),
		a.newSessionsCmd(),
		a.newSkillsCmd(),
		a.newBoxCmd(),
		a.newEgressCmd(),
		a.newSecretsCmd(),
		a.newGatewayCmd(),
		a.newSandboxCmd(),
		a.newCronCmd(),
		a.newMCPCmd(),
		a.newFallbackCmd(),
		a.newACPCmd(),
		a.newProxyCmd(),
		a.newUpdateCmd(),
	)
	root.AddCommand(a.newPairingCmd())
	root.AddCommand(a.faceCommands()...)
	explainArgErrors(root)
	return root
}

// unknownCommand is the argument check of bare `hermes` and of command
// groups (`hermes sessions`): a word there is a mistyped subcommand. It names
// the closest one (cobra's NoArgs error suggests nothing).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if cmd.HasParent() {
		msg = fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	cmd.SuggestionsMinimumDistance = 2
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	if !cmd.HasParent() {
		return errors.New(msg + "; `hermes --help` lists the commands, and a prompt goes after -q or -z")
	}
	return fmt.Errorf("%s; `%s --help` lists its commands", msg, cmd.CommandPath())
}

// explainArgErrors wraps the positional-argument check of every subcommand
// so that cobra's bare "accepts 1 arg(s), received 0" names the command and
// shows its usage line; a command group gets unknownCommand.
func explainArgErrors(root *cobra.Command) {
	for _, c := range root.Commands() {
		explainArgErrors(c)
		if c.HasSubCommands() {
			c.Args = unknownCommand
			if c.Run == nil && c.RunE == nil {
				// cobra checks the arguments of runnable commands only: a
				// group without a run printed its help for a mistyped
				// subcommand and exited 0.
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
			continue
		}
		if c.Args == nil {
			continue
		}
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
				return fmt.Errorf("%s: %v; usage: %s", path, err, cmd.UseLine())
			}
			return nil
		}
	}
}
