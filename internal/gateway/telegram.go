package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermes-go/hermes/internal/session"
)

// TelegramConfig configures the Telegram platform.
type TelegramConfig struct {
	// Token is TELEGRAM_BOT_TOKEN.
	Token string
	// BaseURL is TELEGRAM_BASE_URL (a local Bot API server); "" = api.telegram.org.
	BaseURL string
	// Allowed holds the user ids allowed to talk to the agent
	// (TELEGRAM_ALLOWED_USERS, else GATEWAY_ALLOWED_USERS); AllowAll is
	// GATEWAY_ALLOW_ALL_USERS. With neither, everyone is refused.
	Allowed  map[int64]bool
	AllowAll bool
	// Auth, when it allows anyone, replaces Allowed and AllowAll (the
	// chain AuthorizationFromEnv("telegram", ...) reads).
	Auth Authorization
	// PollTimeout is the long-polling timeout (default 30 s).
	PollTimeout time.Duration
	// TypingEvery repeats the typing indicator while a turn runs (default 4 s).
	TypingEvery time.Duration
	// ToolProgress shows tool calls as one status message, edited in place.
	ToolProgress bool
	// Retry is the delivery retry policy (zero = defaults).
	Retry RetryPolicy
	// Pairing and IgnoreUnknownDMs say what unknown users' direct
	// messages get (see ChatConfig).
	Pairing          Pairer
	IgnoreUnknownDMs bool
	// Warn receives one-line messages for the operator.
	Warn func(string)
	// Lease, when set (replicas on one PostgreSQL database), elects the
	// one replica that long-polls this bot and keeps its update offset
	// (see runLeased); nil polls at once, as one process does.
	Lease Lease
}

// TelegramLimit is Telegram's message limit, in UTF-16 units.
const TelegramLimit = 4096

// Telegram serves the session runtime to Telegram chats (an adapter on
// the chat core): one session per private chat, one per user in a group,
// shared in forum topics, resumed across restarts.
type Telegram struct {
	cfg   TelegramConfig
	bot   *bot.Bot
	chat  *Chat
	fatal chan error
	// poll is the client of leased long polling (nil: a default one).
	poll *http.Client
}

// NewTelegram connects to the Bot API (getMe checks the token).
func NewTelegram(ctx context.Context, rt *session.Runtime, cfg TelegramConfig) (*Telegram, error) {
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	t := &Telegram{cfg: cfg, fatal: make(chan error, 1)}
	auth := Authorization{Allowed: map[string]bool{}, AllowAll: cfg.AllowAll, Source: "TELEGRAM_ALLOWED_USERS"}
	for id := range cfg.Allowed {
		auth.Allowed[strconv.FormatInt(id, 10)] = true
	}
	if len(cfg.Auth.Allowed) > 0 || cfg.Auth.AllowAll || cfg.Auth.Paired != nil {
		auth = cfg.Auth
	}
	chat, err := NewChat(rt, t, ChatConfig{Auth: auth, TypingEvery: cfg.TypingEvery, ToolProgress: cfg.ToolProgress,
		Retry: cfg.Retry, Warn: cfg.Warn, Pairing: cfg.Pairing, IgnoreUnknownDMs: cfg.IgnoreUnknownDMs})
	if err != nil {
		return nil, err
	}
	t.chat = chat
	t.cfg.Warn = chat.Warn
	opts := []bot.Option{
		bot.WithDefaultHandler(t.onUpdate),
		bot.WithHTTPClient(cfg.PollTimeout, &http.Client{Timeout: cfg.PollTimeout + 10*time.Second}),
		bot.WithErrorsHandler(t.onError),
		bot.WithAllowedUpdates(bot.AllowedUpdates{"message"}),
		// One worker calling the handler in update order: Chat.Receive
		// keeps each chat's messages in that order.
		bot.WithWorkers(1),
		bot.WithNotAsyncHandlers(),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, bot.WithServerURL(strings.TrimRight(cfg.BaseURL, "/")))
	}
	b, err := bot.New(cfg.Token, opts...)
	if err != nil {
		if errors.Is(err, bot.ErrorUnauthorized) {
			return nil, errors.New("telegram: the bot token was rejected (TELEGRAM_BOT_TOKEN revoked or wrong): get a new one from @BotFather")
		}
		return nil, fmt.Errorf("telegram: connecting to the Bot API: %w", err)
	}
	t.bot = b
	return t, nil
}

// Chat is the adapter's chat core (for cron delivery: Chat().Deliver).
func (t *Telegram) Chat() *Chat { return t.chat }

// Run long-polls until ctx ends or the token is revoked (with a Lease,
// only while this replica leads); network errors are retried with backoff. It waits for the
// handlers of received messages to finish.
func (t *Telegram) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	var err error
	if t.cfg.Lease != nil {
		go func() { err = t.runLeased(ctx); close(done) }()
	} else {
		go func() { t.bot.Start(ctx); close(done) }()
	}
	chatDone := make(chan struct{})
	go func() { t.chat.Run(ctx); close(chatDone) }()
	select {
	case <-done:
	case ferr := <-t.fatal:
		cancel()
		<-done
		err = ferr
	}
	cancel()
	<-chatDone
	return err
}

func (t *Telegram) onError(err error) {
	if errors.Is(err, bot.ErrorUnauthorized) {
		select {
		case t.fatal <- errors.New("telegram: the bot token was rejected (TELEGRAM_BOT_TOKEN revoked?): get a new one from @BotFather"):
		default:
		}
		return
	}
	t.cfg.Warn("telegram: " + err.Error())
}

// onUpdate hands one incoming message to the chat core, in update order
// (the bot library calls it from its one worker; Receive returns at once).
func (t *Telegram) onUpdate(ctx context.Context, _ *bot.Bot, u *models.Update) {
	m := u.Message
	if m == nil || m.From == nil {
		return
	}
	chat := strconv.FormatInt(m.Chat.ID, 10)
	in := Incoming{Chat: chat, Channel: chat, User: strconv.FormatInt(m.From.ID, 10), UserName: m.From.Username,
		DM: m.Chat.Type == models.ChatTypePrivate, Text: m.Text}
	if m.IsTopicMessage && m.MessageThreadID != 0 {
		in.Thread = strconv.Itoa(m.MessageThreadID)
		in.Chat = chat + "/" + in.Thread
	}
	t.chat.Receive(ctx, in)
}

// Name is "telegram".
func (t *Telegram) Name() string { return "telegram" }

// Limit is TelegramLimit.
func (t *Telegram) Limit() int { return TelegramLimit }

// address splits a chat address "CHAT[/THREAD]".
func (t *Telegram) address(chat string) (int64, int, error) {
	id, thread, _ := strings.Cut(chat, "/")
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %q is not a Telegram chat id", ErrUndeliverable, chat)
	}
	th, _ := strconv.Atoi(thread)
	return n, th, nil
}

// Send posts m (legacy Markdown unless m.Plain).
func (t *Telegram) Send(ctx context.Context, chat string, m OutMessage) (string, error) {
	id, thread, err := t.address(chat)
	if err != nil {
		return "", err
	}
	p := &bot.SendMessageParams{ChatID: id, MessageThreadID: thread, Text: m.Text}
	if !m.Plain {
		p.ParseMode = models.ParseModeMarkdownV1
	}
	msg, err := t.bot.SendMessage(ctx, p)
	if err != nil {
		return "", telegramError(err)
	}
	return strconv.Itoa(msg.ID), nil
}

// Edit replaces the text of message id.
func (t *Telegram) Edit(ctx context.Context, chat, id string, m OutMessage) error {
	cid, _, err := t.address(chat)
	if err != nil {
		return err
	}
	mid, _ := strconv.Atoi(id)
	p := &bot.EditMessageTextParams{ChatID: cid, MessageID: mid, Text: m.Text}
	if !m.Plain {
		p.ParseMode = models.ParseModeMarkdownV1
	}
	_, err = t.bot.EditMessageText(ctx, p)
	return telegramError(err)
}

// Typing sends the "typing" chat action (it shows for about 5 s).
func (t *Telegram) Typing(ctx context.Context, chat string) error {
	id, thread, err := t.address(chat)
	if err != nil {
		return err
	}
	_, err = t.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: id, MessageThreadID: thread, Action: models.ChatActionTyping})
	return telegramError(err)
}

// telegramError maps the Bot API's errors onto the chat core's.
func telegramError(err error) error {
	if err == nil {
		return nil
	}
	var tooMany *bot.TooManyRequestsError
	switch msg := err.Error(); {
	case errors.As(err, &tooMany):
		return &RetryAfterError{After: time.Duration(tooMany.RetryAfter) * time.Second, Err: err}
	case strings.Contains(msg, "message is too long"):
		return fmt.Errorf("%w: %v", ErrTooLong, err)
	case strings.Contains(msg, "can't parse entities"):
		return fmt.Errorf("%w: %v", ErrFormat, err)
	case errors.Is(err, bot.ErrorUnauthorized):
		return fmt.Errorf("%w: %v", ErrRevoked, err)
	case errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorNotFound):
		return fmt.Errorf("%w: %v", ErrUndeliverable, err)
	}
	return err
}
