package cli

import (
	"context"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/session"
)

// telegramPlatform builds the Telegram platform when TELEGRAM_BOT_TOKEN is set.
func (a *App) telegramPlatform(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (*platform, error) {
	return nil, nil
}
