package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot"
)

// ChatDeliverer delivers cron output and send_message texts through a
// running chat platform (its retries and undelivered-reply queue): the
// cron.Deliverer (and tool.Messenger) of a gateway's platform.
type ChatDeliverer struct{ Chat *Chat }

// Deliver implements cron.Deliverer; the platform argument is the Chat's.
func (d ChatDeliverer) Deliver(ctx context.Context, _, chatID, threadID, text string) error {
	return d.Chat.DeliverTo(ctx, chatID, threadID, text)
}

// TelegramDeliverer sends cron output with the Bot API's sendMessage, in
// parts within Telegram's 4096-unit limit, waiting out 429 retry_after.
// It is the cron.Deliverer of `hermes cron tick` outside a running gateway
// (in one, deliveries go through the running Chat: Chat.DeliverTo).
type TelegramDeliverer struct {
	Token   string // the bot token (TELEGRAM_BOT_TOKEN)
	BaseURL string // the Bot API's URL; "" = api.telegram.org (TELEGRAM_BASE_URL)
	// Redact removes secrets from the text before it leaves the host.
	Redact func(string) string
}

// Deliver implements cron.Deliverer; threadID is a forum topic id.
func (t *TelegramDeliverer) Deliver(ctx context.Context, _, chatID, threadID, text string) error {
	opts := []bot.Option{bot.WithSkipGetMe(), bot.WithHTTPClient(30*time.Second, &http.Client{Timeout: 40 * time.Second})}
	if t.BaseURL != "" {
		opts = append(opts, bot.WithServerURL(strings.TrimRight(t.BaseURL, "/")))
	}
	b, err := bot.New(t.Token, opts...)
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	var topic int
	if threadID != "" {
		if _, err := fmt.Sscan(threadID, &topic); err != nil {
			return fmt.Errorf("telegram: thread id %q is not a number", threadID)
		}
	}
	for _, part := range SplitMessage(t.Redact(text), 4096) {
		if err := t.sendPart(ctx, b, chatID, topic, part); err != nil {
			return err
		}
	}
	return nil
}

func (t *TelegramDeliverer) sendPart(ctx context.Context, b *bot.Bot, chatID string, topic int, part string) error {
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
