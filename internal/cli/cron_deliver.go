package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
)

// platformDeliverers routes a cron delivery to the platform it names.
// Platforms register here as the gateway gains them; an unknown one is
// an error naming the variable to set.
type platformDeliverers map[string]cron.Deliverer

// Deliver implements cron.Deliverer.
func (p platformDeliverers) Deliver(ctx context.Context, platform, chatID, threadID, text string) error {
	d, ok := p[platform]
	if !ok {
		return fmt.Errorf("no %s connection is configured (set %s_BOT_TOKEN in HERMES_HOME/.env)", platform, strings.ToUpper(platform))
	}
	return d.Deliver(ctx, platform, chatID, threadID, text)
}

// cronDeliverer returns the deliverers of the platforms configured in
// the environment (today: Telegram).
func (a *App) cronDeliverer(cfg *config.Loaded) cron.Deliverer {
	p := platformDeliverers{}
	if token := cfg.Getenv("TELEGRAM_BOT_TOKEN"); token != "" {
		p["telegram"] = &telegramDeliverer{token: token, baseURL: cfg.Getenv("TELEGRAM_BASE_URL"), redact: redactorFor(cfg, a.Environ(), a.Home())}
	}
	return p
}

// telegramDeliverer sends cron output with the Bot API's sendMessage, in
// parts within Telegram's 4096-unit limit, waiting out 429 retry_after.
type telegramDeliverer struct {
	token, baseURL string
	redact         func(string) string
}

// Deliver implements cron.Deliverer; threadID is a forum topic id.
func (t *telegramDeliverer) Deliver(ctx context.Context, _, chatID, threadID, text string) error {
	opts := []bot.Option{bot.WithSkipGetMe(), bot.WithHTTPClient(30*time.Second, &http.Client{Timeout: 40 * time.Second})}
	if t.baseURL != "" {
		opts = append(opts, bot.WithServerURL(strings.TrimRight(t.baseURL, "/")))
	}
	b, err := bot.New(t.token, opts...)
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	var topic int
	if threadID != "" {
		if _, err := fmt.Sscan(threadID, &topic); err != nil {
			return fmt.Errorf("telegram: thread id %q is not a number", threadID)
		}
	}
	for _, part := range gateway.SplitMessage(t.redact(text), 4096) {
		if err := t.sendPart(ctx, b, chatID, topic, part); err != nil {
			return err
		}
	}
	return nil
}

func (t *telegramDeliverer) sendPart(ctx context.Context, b *bot.Bot, chatID string, topic int, part string) error {
	for attempt := 0; ; attempt++ {
		_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatID, MessageThreadID: topic, Text: part})
		var tooMany *bot.TooManyRequestsError
		if err == nil || !errors.As(err, &tooMany) || attempt >= 5 {
			if err != nil {
				return fmt.Errorf("telegram: sendMessage to %s: %w", chatID, err)
			}
			return nil
		}
		select {
		case <-time.After(time.Duration(tooMany.RetryAfter) * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// redactorFor is the secret redaction of a session runtime on cfg, for
// text sent outside one (cron deliveries).
func redactorFor(cfg *config.Loaded, environ []string, home string) func(string) string {
	return session.NewRedactor(cfg, environ, cfg.Config.Terminal.EnvPassthrough, home).Redact
}
