package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/acp"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/tool"
)

// ACPEntry is the name under which the binary runs `hermes acp` (the
// hermes-acp entry Hermes Agent's image ships; `make install` links it).
const ACPEntry = "hermes-acp"

func (a *App) newACPCmd() *cobra.Command {
	o := &chatOptions{}
	var version, check, setup bool
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "serve the Agent Client Protocol on stdio (for editors: Zed, JetBrains, VS Code)",
		Long: "Speaks ACP (JSON-RPC on stdin/stdout) until the editor closes stdin (requests already received are\n" +
			"answered first). stdout carries only the protocol; logs go to stderr and HERMES_HOME/logs/acp.log.\n" +
			"Sessions are stored with source acp. --provider replay --replay FILE plays a scripted model (offline).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case version:
				exe, _ := os.Executable()
				PrintVersion(a.Stdout, exe)
				return nil
			case check:
				return a.checkACP(cmd.Context(), o)
			case setup:
				return a.runModel(&modelOptions{})
			}
			return a.runACP(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&version, "version", false, "print the version and exit (as hermes --version)")
	f.BoolVar(&check, "check", false, "check that sessions can start here (config, provider credential) and exit")
	f.BoolVar(&setup, "setup", false, "choose provider and model (hermes model), then exit: the editors' setup action")
	f.StringVarP(&o.model, "model", "m", "", "model id (model.default)")
	f.StringVar(&o.provider, "provider", "", "provider: openrouter, openai, anthropic, custom, replay")
	f.StringVar(&o.baseURL, "base-url", "", "override the provider's base URL")
	f.StringVar(&o.replay, "replay", "", "with --provider replay: the recording to play back")
	f.StringVar(&o.record, "record", "", "record the model traffic to FILE")
	f.BoolVar(&o.ignoreUserConfig, "ignore-user-config", false, "ignore config.yaml (.env is still read)")
	return cmd
}

// runACP serves ACP on the app's stdin/stdout. Nothing else may write to
// stdout: warnings and logs go to stderr and the log file.
func (a *App) runACP(ctx context.Context, o *chatOptions) error {
	protocol := a.Stdout
	a.Stdout = a.Stderr
	logger, closeLog := a.acpLogger()
	defer closeLog()
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	newRuntime := func(ctx context.Context, cwd string, files tool.FileAccess) (*session.Runtime, error) {
		return a.acpRuntime(ctx, o, cwd, files)
	}
	srv := acp.New(acp.Options{
		NewRuntime: newRuntime, Logger: logger, Version: Version, Now: a.Now, Cwd: cwd,
	})
	logger.Info("hermes acp started", "version", Version)
	return srv.Serve(ctx, a.Stdin, protocol)
}

// checkACP starts and stops the runtime an editor's session in the current
// directory would get, as Hermes' `hermes acp --check` does: a config,
// provider or credential problem is the error, with its fix.
func (a *App) checkACP(ctx context.Context, o *chatOptions) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	rt, err := a.acpRuntime(ctx, o, cwd, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Fprintf(a.Stdout, "hermes acp: ready (provider %s, model %s, HERMES_HOME %s)\n", rt.ProviderName(), rt.Model(), a.Home())
	return nil
}

// acpRuntime starts the session runtime of one workspace: the user's
// config (with the model flags o) with terminal.cwd set to the editor's
// cwd.
func (a *App) acpRuntime(ctx context.Context, flags *chatOptions, cwd string, files tool.FileAccess) (*session.Runtime, error) {
	cfg, err := config.Load(a.Home(), config.LoadOptions{IgnoreUserConfig: flags.ignoreUserConfig, Getenv: a.Getenv})
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(a.Stderr, "hermes: warning:", w)
	}
	overrides := [][2]string{{"terminal.cwd", cwd}, {"model.default", flags.model}, {"model.provider", flags.provider}, {"model.base_url", flags.baseURL}}
	for _, kv := range overrides {
		if kv[1] == "" {
			continue
		}
		if err := cfg.Override(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	o := a.sessionOptions(cfg, flags)
	o.Platform = acp.Source
	o.Lock = a.turnLock("hermes acp")
	o.Files = files
	o.Messenger = nil // Hermes's hermes-acp toolset has no messaging
	return session.New(ctx, o)
}

// acpLogger logs to stderr and HERMES_HOME/logs/acp.log (appended; the
// file is skipped with a warning when it cannot be opened).
func (a *App) acpLogger() (*slog.Logger, func()) {
	var w io.Writer = a.Stderr
	closeFn := func() {}
	path := filepath.Join(a.Home(), "logs", "acp.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			w = io.MultiWriter(a.Stderr, f)
			closeFn = func() { f.Close() }
		} else {
			fmt.Fprintf(a.Stderr, "hermes: warning: cannot open %s: %v; logging to stderr only\n", path, err)
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})), closeFn
}
