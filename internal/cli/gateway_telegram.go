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
// GATEWAY_ALLOWED_USERS; GATEWAY_ALLOW_ALL_USERS=true (or
// TELEGRAM_ALLOW_ALL_USERS) allows everyone.
func (a *App) telegramPlatform(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (*platform, error) {
	token := cfg.Getenv("TELEGRAM_BOT_TOKEN")
	if token == "" {
		return nil, nil
	}
	pair, ignore := a.unknownDMs(cfg)
	tg, err := gateway.NewTelegram(ctx, rt, gateway.TelegramConfig{Pairing: pair, IgnoreUnknownDMs: ignore,
		Token: token, BaseURL: cfg.Getenv("TELEGRAM_BASE_URL"), Auth: gateway.AuthorizationFromEnv("telegram", cfg.Getenv),
		ToolProgress: true, Warn: a.warnFunc(),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(a.Stderr, "hermes: Telegram connected (long polling)")
	return chatPlatform(ctx, "Telegram", tg), nil
}
