package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/hermes-go/hermes/internal/session"
)

// SlackLimit is the part size for Slack messages, in characters: Slack
// truncates text past 40,000 characters; a margin is kept.
const SlackLimit = 39000

// SlackConfig configures the Slack platform (Socket Mode).
type SlackConfig struct {
	// BotToken is SLACK_BOT_TOKEN (xoxb-); AppToken is SLACK_APP_TOKEN
	// (xapp-, with connections:write) for Socket Mode.
	BotToken, AppToken string
	// APIURL replaces https://slack.com/api/ (SLACK_API_URL; a fake in tests).
	APIURL string
	// Auth is the authorization chain (AuthorizationFromEnv("slack", ...)).
	Auth Authorization
	// RequireMention makes the bot answer in channels only when mentioned,
	// or in a thread where it was mentioned (DMs never need it).
	RequireMention bool
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
}

// Slack serves the session runtime to Slack over Socket Mode (an adapter
// on the chat core): one session per DM, one per user in a channel, one
// shared per thread. Chat addresses are "CHANNEL" or "CHANNEL/THREAD_TS".
type Slack struct {
	cfg   SlackConfig
	api   *slack.Client
	sm    *socketmode.Client
	chat  *Chat
	botID string
}

// NewSlack checks the bot token (auth.test) and builds the adapter.
func NewSlack(ctx context.Context, rt *session.Runtime, cfg SlackConfig) (*Slack, error) {
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = 2 * time.Minute
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	if cfg.Auth.Source == "" {
		cfg.Auth.Source = "SLACK_ALLOWED_USERS"
	}
	if !strings.HasPrefix(cfg.AppToken, "xapp-") {
		return nil, errors.New("slack: SLACK_APP_TOKEN must be an app-level token (xapp-...) with connections:write, for Socket Mode")
	}
	opts := []slack.Option{slack.OptionAppLevelToken(cfg.AppToken), slack.OptionHTTPClient(&http.Client{Timeout: 30 * time.Second})}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slack.OptionAPIURL(u))
	}
	api := slack.New(cfg.BotToken, opts...)
	me, err := api.AuthTestContext(ctx)
	if err != nil {
		if errors.Is(slackError(err), ErrRevoked) {
			return nil, errors.New("slack: the bot token was rejected (SLACK_BOT_TOKEN revoked or wrong): reinstall the app to get a new one")
		}
		return nil, fmt.Errorf("slack: connecting: %w", err)
	}
	s := &Slack{cfg: cfg, api: api, botID: me.UserID}
	s.sm = socketmode.New(api)
	chat, err := NewChat(rt, s, ChatConfig{Auth: cfg.Auth, TypingEvery: time.Hour, ToolProgress: cfg.ToolProgress,
		Retry: cfg.Retry, Warn: cfg.Warn, Pairing: cfg.Pairing, IgnoreUnknownDMs: cfg.IgnoreUnknownDMs})
	if err != nil {
		return nil, err
	}
	s.chat = chat
	s.cfg.Warn = chat.Warn
	return s, nil
}

// Chat is the adapter's chat core (for cron delivery: Chat().Deliver).
func (s *Slack) Chat() *Chat { return s.chat }

// Run keeps the Socket Mode connection until ctx ends: network errors
// reconnect with backoff forever; a rejected token stops it with an
// error. It waits for the handlers of received messages.
func (s *Slack) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chatDone := make(chan struct{})
	go func() { s.chat.Run(ctx); close(chatDone) }()
	go s.readEvents(ctx)
	err := s.connectLoop(ctx)
	cancel()
	<-chatDone
	return err
}

func (s *Slack) connectLoop(ctx context.Context) error {
	wait := time.Second
	for {
		start := time.Now()
		err := s.sm.RunContext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(slackError(err), ErrRevoked) {
			return errors.New("slack: the token was rejected (SLACK_BOT_TOKEN or SLACK_APP_TOKEN revoked?): reinstall the app or create a new app-level token")
		}
		if time.Since(start) > time.Minute {
			wait = time.Second
		}
		s.cfg.Warn(fmt.Sprintf("slack: connection failed (%v); retrying in %s", err, wait))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, s.cfg.ReconnectMax)
	}
}

// readEvents acknowledges Socket Mode envelopes and hands messages to
// the chat core.
func (s *Slack) readEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case evt := <-s.sm.Events:
			switch evt.Type {
			case socketmode.EventTypeEventsAPI:
				if evt.Request != nil {
					_ = s.sm.Ack(*evt.Request)
				}
				api, ok := evt.Data.(slackevents.EventsAPIEvent)
				if !ok || api.Type != slackevents.CallbackEvent {
					continue
				}
				if m, ok := api.InnerEvent.Data.(*slackevents.MessageEvent); ok {
					if in, ok := s.incoming(m); ok {
						s.chat.Receive(ctx, in)
					}
				}
			case socketmode.EventTypeConnectionError:
				if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
					s.cfg.Warn(fmt.Sprintf("slack: connecting (attempt %d): %v", e.Attempt, e.ErrorObj))
				}
			}
		}
	}
}

// incoming reads a message event; it reports false for messages the bot
// ignores (its own, other bots', edits, channel chatter without a mention).
func (s *Slack) incoming(m *slackevents.MessageEvent) (Incoming, bool) {
	if m.User == "" || m.User == s.botID || m.BotID != "" || m.SubType != "" {
		return Incoming{}, false
	}
	in := Incoming{Chat: m.Channel, Channel: m.Channel, User: m.User, Text: m.Text, DM: m.ChannelType == "im"}
	mention := "<@" + s.botID + ">"
	mentioned := strings.Contains(in.Text, mention)
	in.Text = strings.TrimSpace(strings.ReplaceAll(in.Text, mention, ""))
	if !in.DM && m.ThreadTimeStamp != "" {
		in.Thread = m.ThreadTimeStamp
		in.Chat = m.Channel + "/" + m.ThreadTimeStamp
	}
	if !in.DM && s.cfg.RequireMention && !mentioned && !s.chat.Engaged(in) {
		return Incoming{}, false
	}
	// Slack's client takes "/word" for its own slash commands: "!new" is /new.
	if rest, ok := strings.CutPrefix(in.Text, "!"); ok {
		if name, _, _ := strings.Cut(rest, " "); IsCommand(name) {
			in.Text = "/" + rest
		}
	}
	return in, true
}

// Name is "slack".
func (s *Slack) Name() string { return "slack" }

// Limit is SlackLimit.
func (s *Slack) Limit() int { return SlackLimit }

func slackAddress(chat string) (channel string, opts []slack.MsgOption) {
	channel, thread, _ := strings.Cut(chat, "/")
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	return channel, opts
}

// Send posts m (chat.postMessage); Plain turns mrkdwn off.
func (s *Slack) Send(ctx context.Context, chat string, m OutMessage) (string, error) {
	channel, opts := slackAddress(chat)
	opts = append(opts, slack.MsgOptionText(m.Text, false))
	if m.Plain {
		opts = append(opts, slack.MsgOptionDisableMarkdown())
	}
	_, ts, err := s.api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return "", slackError(err)
	}
	return ts, nil
}

// Edit replaces the text of message ts (chat.update).
func (s *Slack) Edit(ctx context.Context, chat, ts string, m OutMessage) error {
	channel, _ := slackAddress(chat)
	_, _, _, err := s.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(m.Text, false))
	return slackError(err)
}

// Typing is a no-op: Slack has no typing indicator for bots over the Web API.
func (s *Slack) Typing(context.Context, string) error { return nil }

// slackError maps slack-go's errors onto the chat core's.
func slackError(err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &RetryAfterError{After: rl.RetryAfter, Err: err}
	}
	switch err.Error() {
	case "msg_too_long":
		return fmt.Errorf("%w: %v", ErrTooLong, err)
	case "invalid_auth", "token_revoked", "account_inactive", "not_authed", "token_expired":
		return fmt.Errorf("%w: %v", ErrRevoked, err)
	case "channel_not_found", "not_in_channel", "is_archived", "message_not_found", "restricted_action":
		return fmt.Errorf("%w: %v", ErrUndeliverable, err)
	}
	return err
}
