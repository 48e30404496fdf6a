package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/hermes-go/hermes/internal/session"
)

// DiscordLimit is Discord's message content limit, in characters.
const DiscordLimit = 2000

// DiscordConfig configures the Discord platform.
type DiscordConfig struct {
	// Token is DISCORD_BOT_TOKEN.
	Token string
	// BaseURL replaces https://discord.com/ (an in-repo fake in tests;
	// DISCORD_BASE_URL). discordgo keeps its endpoints in package
	// variables, so this is process-wide: one Discord base per process.
	BaseURL string
	// Auth is the authorization chain (AuthorizationFromEnv("discord", ...)).
	Auth Authorization
	// RequireMention makes the bot answer in guild channels only when
	// mentioned, or in a thread where it was mentioned (DMs never need it).
	RequireMention bool
	// TypingEvery repeats the typing indicator (default 8 s; it shows 10 s).
	TypingEvery time.Duration
	// ToolProgress shows tool calls as one status message, edited in place.
	ToolProgress bool
	// Retry is the delivery retry policy (zero = defaults).
	Retry RetryPolicy
	// ReconnectMax bounds the reconnect backoff (default 2 min).
	ReconnectMax time.Duration
	// Pairing and IgnoreUnknownDMs say what unknown users' direct
	// messages get (see ChatConfig).
	Pairing          Pairer
	IgnoreUnknownDMs bool
	// Warn receives one-line messages for the operator.
	Warn func(string)
	// Lease, when set (replicas on one PostgreSQL database), elects the
	// one replica that keeps a gateway connection: Discord sends every
	// event to each connection of a bot, so two replicas would answer
	// each message twice. nil connects at once, as one process does.
	Lease Lease
}

// Discord serves the session runtime to Discord (an adapter on the chat
// core): one session per DM, one per user in a guild channel, one shared
// per thread.
type Discord struct {
	cfg   DiscordConfig
	dg    *discordgo.Session
	chat  *Chat
	botID string

	mu       sync.Mutex
	ctx      context.Context
	channels map[string]*discordgo.Channel
	dropped  chan struct{}
}

// UseDiscordBaseURL points discordgo's endpoint variables at base
// ("http://127.0.0.1:PORT/"). It changes process-wide state: call it once,
// before any Discord session runs (tests using it must not run in parallel).
func UseDiscordBaseURL(base string) {
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	if discordgo.EndpointDiscord == base {
		return
	}
	api := base + "api/v" + discordgo.APIVersion + "/"
	discordgo.EndpointDiscord = base
	discordgo.EndpointAPI = api
	discordgo.EndpointGuilds = api + "guilds/"
	discordgo.EndpointChannels = api + "channels/"
	discordgo.EndpointUsers = api + "users/"
	discordgo.EndpointGateway = api + "gateway"
	discordgo.EndpointGatewayBot = discordgo.EndpointGateway + "/bot"
	discordgo.EndpointWebhooks = api + "webhooks/"
	discordgo.EndpointApplications = api + "applications"
}

// NewDiscord checks the token (GET users/@me) and builds the adapter.
func NewDiscord(ctx context.Context, rt *session.Runtime, cfg DiscordConfig) (*Discord, error) {
	if cfg.TypingEvery <= 0 {
		cfg.TypingEvery = 8 * time.Second
	}
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = 2 * time.Minute
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	if cfg.Auth.Source == "" {
		cfg.Auth.Source = "DISCORD_ALLOWED_USERS"
	}
	if cfg.BaseURL != "" {
		UseDiscordBaseURL(cfg.BaseURL)
	}
	dg, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	dg.ShouldReconnectOnError = false // Run reconnects, telling a revoked token apart
	dg.ShouldRetryOnRateLimit = false // the chat core waits out retry_after
	dg.LogLevel = -1                  // errors come back to Run and the chat core
	dg.SyncEvents = true              // handlers run in event order: a chat's messages keep it (Chat.Receive)
	dg.Client = &http.Client{Timeout: 30 * time.Second}
	dg.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
	d := &Discord{cfg: cfg, dg: dg, ctx: ctx, channels: map[string]*discordgo.Channel{}, dropped: make(chan struct{}, 1)}
	me, err := dg.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		if errors.Is(discordError(err), ErrRevoked) {
			return nil, errors.New("discord: the bot token was rejected (DISCORD_BOT_TOKEN revoked or wrong): reset it in the Developer Portal, Bot page")
		}
		return nil, fmt.Errorf("discord: connecting: %w", err)
	}
	d.botID = me.ID
	chat, err := NewChat(rt, d, ChatConfig{Auth: cfg.Auth, TypingEvery: cfg.TypingEvery, ToolProgress: cfg.ToolProgress,
		Retry: cfg.Retry, Warn: cfg.Warn, Pairing: cfg.Pairing, IgnoreUnknownDMs: cfg.IgnoreUnknownDMs})
	if err != nil {
		return nil, err
	}
	d.chat = chat
	d.cfg.Warn = chat.Warn
	dg.AddHandler(d.onMessage)
	dg.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) {
		select {
		case d.dropped <- struct{}{}:
		default:
		}
	})
	return d, nil
}

// Chat is the adapter's chat core (for cron delivery: Chat().Deliver).
func (d *Discord) Chat() *Chat { return d.chat }

// Run keeps the gateway connection until ctx ends: network errors
// reconnect with backoff forever; a rejected token or intents stop it
// with an error. It waits for the handlers of received messages.
func (d *Discord) Run(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	chatCtx, stopChat := context.WithCancel(ctx)
	chatDone := make(chan struct{})
	go func() { d.chat.Run(chatCtx); close(chatDone) }()
	var err error
	if d.cfg.Lease != nil {
		l := &leader{lease: d.cfg.Lease, what: "discord: gateway connection", warn: d.cfg.Warn, now: time.Now}
		err = l.run(ctx, func(lctx context.Context, _ int64) error {
			err := d.connectLoop(lctx)
			_ = d.dg.Close()
			return err
		})
	} else {
		err = d.connectLoop(ctx)
	}
	_ = d.dg.Close()
	stopChat()
	<-chatDone
	return err
}

func (d *Discord) connectLoop(ctx context.Context) error {
	wait := time.Second
	for {
		err := d.dg.Open()
		if err == nil {
			wait = time.Second
			select {
			case <-ctx.Done():
				return nil
			case <-d.dropped:
				d.cfg.Warn("discord: connection lost; reconnecting")
				continue
			}
		}
		if fatal := discordFatal(err); fatal != nil {
			return fatal
		}
		d.cfg.Warn(fmt.Sprintf("discord: connecting failed (%v); retrying in %s", err, wait))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, d.cfg.ReconnectMax)
	}
}

// discordFatal names the connection errors retrying cannot fix.
func discordFatal(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return errors.New("discord: the bot token was rejected (DISCORD_BOT_TOKEN revoked?): reset it in the Developer Portal, Bot page")
		case 4013, 4014:
			return errors.New("discord: the gateway refused the intents: enable MESSAGE CONTENT INTENT in the Developer Portal, Bot page")
		}
	}
	if errors.Is(discordError(err), ErrRevoked) {
		return errors.New("discord: the bot token was rejected (DISCORD_BOT_TOKEN revoked?): reset it in the Developer Portal, Bot page")
	}
	return nil
}

// onMessage hands a received message to the chat core.
func (d *Discord) onMessage(_ *discordgo.Session, m *discordgo.MessageCreate) {
	if m.Author == nil || m.Author.Bot || m.Author.ID == d.botID {
		return
	}
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	in := Incoming{Chat: m.ChannelID, Channel: m.ChannelID, User: m.Author.ID, UserName: m.Author.Username, Text: m.Content}
	in.DM = m.GuildID == ""
	if !in.DM {
		if ch := d.channel(ctx, m.ChannelID); ch != nil && ch.IsThread() {
			in.Channel, in.Thread = ch.ParentID, ch.ID
		}
	}
	var mentioned bool
	in.Text, mentioned = d.stripMention(in.Text)
	if !in.DM && d.cfg.RequireMention && !mentioned && !d.chat.Engaged(in) {
		return
	}
	d.chat.Receive(ctx, in)
}

// stripMention removes the bot's mention; it reports whether there was one.
func (d *Discord) stripMention(text string) (string, bool) {
	found := false
	for _, tag := range []string{"<@" + d.botID + ">", "<@!" + d.botID + ">"} {
		if strings.Contains(text, tag) {
			found = true
			text = strings.ReplaceAll(text, tag, "")
		}
	}
	return strings.TrimSpace(text), found
}

// channel looks a channel up (state, then REST), cached.
func (d *Discord) channel(ctx context.Context, id string) *discordgo.Channel {
	d.mu.Lock()
	ch, ok := d.channels[id]
	d.mu.Unlock()
	if ok {
		return ch
	}
	if d.dg.State != nil {
		if ch, err := d.dg.State.Channel(id); err == nil {
			return ch
		}
	}
	ch, err := d.dg.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		d.cfg.Warn(fmt.Sprintf("discord: looking up channel %s: %v", id, err))
		return nil
	}
	d.mu.Lock()
	d.channels[id] = ch
	d.mu.Unlock()
	return ch
}

// Address is the channel to post to: a thread is a channel of its own.
func (d *Discord) Address(chatID, threadID string) string {
	if threadID != "" {
		return threadID
	}
	return chatID
}

// Name is "discord".
func (d *Discord) Name() string { return "discord" }

// Limit is DiscordLimit.
func (d *Discord) Limit() int { return DiscordLimit }

// noMentions keeps the agent's text from pinging anyone (@everyone...).
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}

// Send posts m to the channel chat.
func (d *Discord) Send(ctx context.Context, chat string, m OutMessage) (string, error) {
	msg, err := d.dg.ChannelMessageSendComplex(chat, &discordgo.MessageSend{Content: m.Text, AllowedMentions: noMentions},
		discordgo.WithContext(ctx))
	if err != nil {
		return "", discordError(err)
	}
	return msg.ID, nil
}

// Edit replaces the content of message id.
func (d *Discord) Edit(ctx context.Context, chat, id string, m OutMessage) error {
	e := discordgo.NewMessageEdit(chat, id).SetContent(m.Text)
	e.AllowedMentions = noMentions
	_, err := d.dg.ChannelMessageEditComplex(e, discordgo.WithContext(ctx))
	return discordError(err)
}

// Typing triggers the typing indicator (shown for 10 s).
func (d *Discord) Typing(ctx context.Context, chat string) error {
	return discordError(d.dg.ChannelTyping(chat, discordgo.WithContext(ctx)))
}

// discordError maps discordgo's errors onto the chat core's.
func discordError(err error) error {
	if err == nil {
		return nil
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		return &RetryAfterError{After: rl.RetryAfter, Err: err}
	}
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return err
	}
	code := 0
	if re.Message != nil {
		code = re.Message.Code
	}
	switch st := re.Response.StatusCode; {
	case st == http.StatusUnauthorized:
		return fmt.Errorf("%w: %v", ErrRevoked, err)
	case code == 50035 && strings.Contains(string(re.ResponseBody), "BASE_TYPE_MAX_LENGTH"):
		return fmt.Errorf("%w: %v", ErrTooLong, err)
	case st == http.StatusForbidden, st == http.StatusNotFound, st == http.StatusBadRequest:
		return fmt.Errorf("%w: %v", ErrUndeliverable, err)
	}
	return err
}
