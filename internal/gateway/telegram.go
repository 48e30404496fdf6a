package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermes-go/hermes/internal/approval"
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
	// PollTimeout is the long-polling timeout (default 30 s).
	PollTimeout time.Duration
	// TypingEvery repeats the typing indicator while a turn runs (default 4 s).
	TypingEvery time.Duration
	// Warn receives one-line messages for the operator.
	Warn func(string)
}

// Telegram serves the session runtime to Telegram chats: one session per
// private chat, one per user in a group, resumed across restarts.
type Telegram struct {
	cfg     TelegramConfig
	rt      *session.Runtime
	bot     *bot.Bot
	fatal   chan error
	refused sync.Map // user id → true once refused
	running sync.WaitGroup
}

// ParseAllowedUsers reads a comma-separated list of Telegram user ids.
func ParseAllowedUsers(list string) (map[int64]bool, error) {
	out := map[int64]bool{}
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("allowed users: %q is not a numeric Telegram user id", f)
		}
		out[id] = true
	}
	return out, nil
}

// NewTelegram connects to the Bot API (getMe checks the token).
func NewTelegram(ctx context.Context, rt *session.Runtime, cfg TelegramConfig) (*Telegram, error) {
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.TypingEvery <= 0 {
		cfg.TypingEvery = 4 * time.Second
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	if len(cfg.Allowed) == 0 && !cfg.AllowAll {
		cfg.Warn("warning: telegram: no user is allowed (set TELEGRAM_ALLOWED_USERS, GATEWAY_ALLOWED_USERS or GATEWAY_ALLOW_ALL_USERS=true); every message will be refused")
	}
	t := &Telegram{cfg: cfg, rt: rt, fatal: make(chan error, 1)}
	opts := []bot.Option{
		bot.WithDefaultHandler(t.onUpdate),
		bot.WithHTTPClient(cfg.PollTimeout, &http.Client{Timeout: cfg.PollTimeout + 10*time.Second}),
		bot.WithErrorsHandler(t.onError),
		bot.WithAllowedUpdates(bot.AllowedUpdates{"message"}),
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

// Run long-polls until ctx ends or the token is revoked; network errors
// are retried with backoff by the client library. It waits for the
// handlers of received messages to finish.
func (t *Telegram) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { t.bot.Start(ctx); close(done) }()
	var err error
	select {
	case <-done:
	case err = <-t.fatal:
		cancel()
		<-done
	}
	t.running.Wait()
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

func (t *Telegram) allowed(user int64) bool { return t.cfg.AllowAll || t.cfg.Allowed[user] }

// sessionKey names the conversation: the chat for a private chat, the
// user within the chat for a group.
func sessionKey(m *models.Message) string {
	if m.Chat.Type == models.ChatTypePrivate {
		return "telegram:dm:" + strconv.FormatInt(m.Chat.ID, 10)
	}
	return "telegram:group:" + strconv.FormatInt(m.Chat.ID, 10) + ":" + strconv.FormatInt(m.From.ID, 10)
}

// onUpdate handles one incoming message (each on its own goroutine).
func (t *Telegram) onUpdate(ctx context.Context, _ *bot.Bot, u *models.Update) {
	m := u.Message
	if m == nil || m.From == nil || strings.TrimSpace(m.Text) == "" {
		return
	}
	t.running.Add(1)
	defer t.running.Done()
	// Replies outlive a stopping poller: the drain waits for them.
	ctx = context.WithoutCancel(ctx)
	chat := m.Chat.ID
	if !t.allowed(m.From.ID) {
		if _, seen := t.refused.LoadOrStore(m.From.ID, true); !seen {
			t.send(ctx, chat, "Sorry, you are not allowed to use this agent. Ask its operator to add your user id ("+
				strconv.FormatInt(m.From.ID, 10)+") to TELEGRAM_ALLOWED_USERS.")
		}
		return
	}
	key := sessionKey(m)
	if strings.HasPrefix(m.Text, "/") {
		t.command(ctx, chat, key, m.Text)
		return
	}
	sess, err := t.rt.Open(ctx, session.OpenOptions{Key: key, Source: "telegram", Platform: "telegram"})
	if err != nil {
		t.send(ctx, chat, "Sorry, the session could not be opened: "+err.Error())
		return
	}
	t.converse(ctx, chat, sess, m.Text)
}

// converse runs one message through the session and sends the answer.
func (t *Telegram) converse(ctx context.Context, chat int64, sess *session.Session, text string) {
	sub := sess.Subscribe(session.SubscribeOptions{Approver: true})
	defer sub.Close()
	turn, ack, err := sess.Send(ctx, text, session.SendOptions{})
	if err != nil {
		t.send(ctx, chat, "Sorry, the message was not taken: "+err.Error())
		return
	}
	if ack.Position > 0 {
		t.send(ctx, chat, fmt.Sprintf("Queued (%d ahead): I'll answer when the current message is done. /stop cancels it.", ack.Position))
	}
	typing := time.NewTicker(t.cfg.TypingEvery)
	defer typing.Stop()
	started := false
	events := make(chan session.Event)
	go func() {
		defer close(events)
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				return
			}
			events <- ev
			if ev.TurnID == turn.ID && (ev.Kind == session.Final || ev.Kind == session.Error) {
				return
			}
		}
	}()
	for {
		select {
		case <-typing.C:
			if started {
				t.typing(ctx, chat)
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.TurnID != turn.ID {
				continue
			}
			switch ev.Kind {
			case session.TurnStart:
				started = true
				t.typing(ctx, chat)
			case session.ApprovalRequest:
				p := ev.Approval
				what := p.Command
				if what == "" {
					what = strings.TrimSpace(p.Tool + " " + p.Action + " " + p.Path)
				}
				t.send(ctx, chat, fmt.Sprintf("⚠ Approval needed: %s\n%s\nReply /approve (once), /approve session, /approve always, or /deny.", p.Danger, what))
			case session.Final:
				answer := ev.Text
				if strings.TrimSpace(answer) == "" {
					answer = "(no answer)"
				}
				t.send(ctx, chat, answer)
				return
			case session.Error:
				if ev.Cancelled {
					t.send(ctx, chat, "Stopped.")
				} else {
					t.send(ctx, chat, "Sorry, that failed: "+ev.Err.Error())
				}
				return
			}
		}
	}
}

// command runs a chat command.
func (t *Telegram) command(ctx context.Context, chat int64, key, text string) {
	fields := strings.Fields(text)
	name := strings.ToLower(fields[0])
	name, _, _ = strings.Cut(name, "@") // /help@hermes_bot in groups
	open := func(fresh bool) *session.Session {
		s, err := t.rt.Open(ctx, session.OpenOptions{Key: key, New: fresh, Source: "telegram", Platform: "telegram"})
		if err != nil {
			t.send(ctx, chat, "Sorry, the session could not be opened: "+err.Error())
			return nil
		}
		return s
	}
	switch name {
	case "/new", "/reset":
		if s := open(false); s != nil {
			s.Cancel()
		}
		if s := open(true); s != nil {
			t.send(ctx, chat, "New session started.")
		}
	case "/stop":
		if s := open(false); s != nil {
			if s.Cancel() {
				t.send(ctx, chat, "Stopping…")
			} else {
				t.send(ctx, chat, "Nothing is running.")
			}
		}
	case "/usage":
		if s := open(false); s != nil {
			st, err := t.rt.Store().Session(ctx, s.ID())
			if err != nil {
				t.send(ctx, chat, "Sorry: "+err.Error())
				return
			}
			t.send(ctx, chat, fmt.Sprintf("Session %s: input %d tokens, output %d tokens, %d API calls.",
				s.ID(), st.Usage.InputTokens, st.Usage.OutputTokens, st.APICallCount))
		}
	case "/approve", "/deny":
		s := open(false)
		if s == nil {
			return
		}
		answer := approval.Deny
		if name == "/approve" {
			answer = approval.Once
			if len(fields) > 1 {
				answer = approval.ParseAnswer(fields[1])
			}
		}
		if !s.Approve("", answer) {
			t.send(ctx, chat, "No approval is pending.")
			return
		}
		t.send(ctx, chat, "Answered: "+answer.String()+".")
	case "/help", "/start":
		t.send(ctx, chat, "Send a message to talk to the agent.\n/new or /reset: start a new session\n/stop: stop the running answer\n"+
			"/usage: token usage\n/approve [session|always], /deny: answer an approval request\n/help: this text")
	default:
		t.send(ctx, chat, "Unknown command "+fields[0]+"; /help lists the commands.")
	}
}

// maxSendAttempts bounds retries of one part (429, network errors).
const maxSendAttempts = 8

// send delivers text in parts within Telegram's limit, waiting out 429
// retry_after and retrying network errors; it reports undeliverable
// parts to the operator rather than dropping them silently.
func (t *Telegram) send(ctx context.Context, chat int64, text string) {
	for _, part := range SplitMessage(t.rt.Redactor().Redact(text), 4096) {
		var err error
		for attempt := 0; attempt < maxSendAttempts; attempt++ {
			_, err = t.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: part})
			if err == nil {
				break
			}
			var tooMany *bot.TooManyRequestsError
			wait := time.Duration(attempt+1) * 500 * time.Millisecond
			switch {
			case errors.As(err, &tooMany):
				wait = time.Duration(tooMany.RetryAfter) * time.Second
			case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorUnauthorized):
				attempt = maxSendAttempts // not retryable
				continue
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			t.cfg.Warn(fmt.Sprintf("telegram: a reply to chat %d could not be delivered: %v", chat, err))
		}
	}
}

func (t *Telegram) typing(ctx context.Context, chat int64) {
	_, _ = t.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping})
}
