package cli

import (
	"context"
	"fmt"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
)

// telegramPlatform builds the Telegram platform when TELEGRAM_BOT_TOKEN is
// set. Allowed users come from TELEGRAM_ALLOWED_USERS, else
// GATEWAY_ALLOWED_USERS; GATEWAY_ALLOW_ALL_USERS=true allows everyone.
func (a *App) telegramPlatform(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (*platform, error) {
	token := cfg.Getenv("TELEGRAM_BOT_TOKEN")
	if token == "" {
		return nil, nil
	}
	list, from := cfg.Getenv("TELEGRAM_ALLOWED_USERS"), "TELEGRAM_ALLOWED_USERS"
	if list == "" {
		list, from = cfg.Getenv("GATEWAY_ALLOWED_USERS"), "GATEWAY_ALLOWED_USERS"
	}
	allowed, err := gateway.ParseAllowedUsers(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	tg, err := gateway.NewTelegram(ctx, rt, gateway.TelegramConfig{
		Token: token, BaseURL: cfg.Getenv("TELEGRAM_BASE_URL"), Allowed: allowed,
		AllowAll: truthy(cfg.Getenv("GATEWAY_ALLOW_ALL_USERS")),
		Warn:     func(msg string) { fmt.Fprintln(a.Stderr, "hermes:", msg) },
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(a.Stderr, "hermes: Telegram connected (long polling)")
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	return &platform{
		name: "Telegram",
		serve: func() error {
			defer close(done)
			return tg.Run(runCtx)
		},
		stop: func(dctx context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-dctx.Done():
				return dctx.Err()
			}
		},
	}, nil
}
