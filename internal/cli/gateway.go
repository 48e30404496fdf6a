package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
)

// defaultDrainTimeout bounds how long SIGTERM waits for running turns;
// HERMES_RESTART_DRAIN_TIMEOUT (seconds) overrides it.
const defaultDrainTimeout = 30 * time.Second

func (a *App) newGatewayCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "gateway", Short: "serve the agent to chat platforms and the OpenAI-compatible API"}
	cmd.AddCommand(a.newGatewaySuperviseCmds()...)
	cmd.AddCommand(&cobra.Command{
		Use: "run", Short: "run the gateway in the foreground (SIGTERM drains running turns and exits 0)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runGateway(cmd.Context()) },
	})
	return cmd
}

// platform is one running gateway platform.
type platform struct {
	name  string
	serve func() error
	stop  func(ctx context.Context) error
	// chat is a chat platform's core: cron delivers through it, so a
	// delivery the platform refuses is kept and retried like a reply.
	chat *gateway.Chat
}

// runGateway starts the enabled platforms on one session runtime and runs
// until the context ends (SIGINT/SIGTERM), then drains and exits 0.
func (a *App) runGateway(ctx context.Context) error {
	cfg, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(a.Stderr, "hermes: warning:", w)
	}
	publish, release, err := gateway.Claim(a.Home(), a.Now())
	if err != nil {
		return err
	}
	defer release()
	o := a.sessionOptions(cfg, &chatOptions{})
	o.Platform = "gateway"
	o.Lock = a.turnLock("hermes gateway")
	o.MaxSessions = 256
	router := a.gatewayRouter(cfg)
	o.Messenger = nil // send_message only where a chat platform runs
	for _, token := range []string{"TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "SLACK_BOT_TOKEN"} {
		if cfg.Getenv(token) != "" {
			o.Messenger = router
		}
	}
	rt, err := session.New(context.WithoutCancel(ctx), o)
	if err != nil {
		return err
	}
	defer rt.Close()
	platforms, err := a.gatewayPlatforms(ctx, cfg, rt)
	if err != nil {
		return err
	}
	if len(platforms) == 0 {
		return errors.New("no gateway platform is enabled: set API_SERVER_ENABLED=true, TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN or SLACK_BOT_TOKEN (in the environment or HERMES_HOME/.env)")
	}
	routePlatforms(router, platforms)
	stopCron, waitCron := a.startCronTicker(ctx, cfg, rt, router)
	failed := make(chan error, len(platforms))
	for _, p := range platforms {
		go func() {
			if err := p.serve(); err != nil {
				failed <- fmt.Errorf("%s: %w", p.name, err)
			}
		}()
	}
	if err := publish(platformNames(platforms)); err != nil {
		fmt.Fprintf(a.Stderr, "hermes: warning: writing %s: %v\n", gateway.PIDPath(a.Home()), err)
	}
	runErr := a.waitPlatforms(ctx, failed, len(platforms))
	drainTimeout := defaultDrainTimeout
	if n, ok := envInt(cfg, "HERMES_RESTART_DRAIN_TIMEOUT", a.Stderr); ok {
		drainTimeout = time.Duration(n) * time.Second
	}
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	stopCron() // no new cron runs; the running ones drain with the turns
	for _, p := range platforms {
		if err := p.stop(dctx); err != nil && runErr == nil {
			fmt.Fprintf(a.Stderr, "hermes: %s: stopping: %v\n", p.name, err)
		}
	}
	if err := rt.Drain(dctx); err != nil {
		fmt.Fprintf(a.Stderr, "hermes: running turns did not finish within %s; they are cancelled and can be resumed\n", drainTimeout)
	}
	waitCron(dctx)
	return runErr
}

// waitPlatforms waits until ctx ends (nil) or every one of n platforms
// failed (the last error); a platform failing while others run is reported.
func (a *App) waitPlatforms(ctx context.Context, failed <-chan error, n int) error {
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(a.Stderr, "hermes: gateway stopping: draining running turns")
			return nil
		case err := <-failed:
			if n--; n == 0 {
				return err
			}
			fmt.Fprintf(a.Stderr, "hermes: %v; the other platforms keep running\n", err)
		}
	}
}

// gatewayPlatforms builds the platforms the environment enables.
func (a *App) gatewayPlatforms(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) ([]platform, error) {
	var out []platform
	if truthy(cfg.Getenv("API_SERVER_ENABLED")) {
		port := gateway.DefaultAPIServerPort
		if v := cfg.Getenv("API_SERVER_PORT"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 65535 {
				return nil, fmt.Errorf("API_SERVER_PORT=%q is not a port number (0-65535)", v)
			}
			port = n
		}
		api, err := gateway.NewAPIServer(rt, gateway.APIServerConfig{
			Key: cfg.Getenv("API_SERVER_KEY"), Host: cfg.Getenv("API_SERVER_HOST"), Port: port, Now: a.Now,
			AllowedOrigins: splitList(cfg.Getenv("API_SERVER_CORS_ORIGINS")),
			Responses:      database.Responses(rt.Store()),
			Log:            slog.New(slog.NewTextHandler(a.Stderr, nil)),
		})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(a.Stderr, "hermes: API server listening on http://%s/v1\n", api.Addr())
		out = append(out, platform{name: "API server", serve: api.Serve, stop: api.Shutdown})
	}
	chats, failed := a.chatPlatforms(ctx, cfg, rt)
	out = append(out, chats...)
	if len(out) == 0 && failed > 0 {
		return nil, errors.New("no gateway platform could start (see above)")
	}
	return out, nil
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// splitList splits a comma-separated variable, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
