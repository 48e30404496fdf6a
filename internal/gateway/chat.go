package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/outbox"
	"github.com/hermes-go/hermes/internal/session"
)

// Platform is a chat platform as the chat core sees it (Telegram,
// Discord, Slack). Chat addresses are the adapter's own strings (a
// channel id, or channel and thread); the core only passes them back.
//
// Send, Edit and Typing return the platform's errors mapped onto
// RetryAfterError, ErrTooLong, ErrFormat, ErrRevoked and ErrUndeliverable
// where they apply; any other error is taken as transient (network).
type Platform interface {
	// Name is the platform's name: state.db source, session key part and
	// environment prefix ("telegram", "discord", "slack").
	Name() string
	// Limit is the longest message the platform takes, in UTF-16 units
	// (Telegram counts UTF-16 units; Discord and Slack count characters,
	// which UTF-16 units never undercount).
	Limit() int
	// Send posts a message to chat and returns its id (for Edit).
	Send(ctx context.Context, chat string, m OutMessage) (id string, err error)
	// Edit replaces the text of the message id in chat.
	Edit(ctx context.Context, chat, id string, m OutMessage) error
	// Typing shows a typing indicator in chat (a no-op where the platform
	// has none for bots).
	Typing(ctx context.Context, chat string) error
}

// OutMessage is a message to send. Plain asks for no markup parsing (the
// gateway's own texts, and the retry after a markup error).
type OutMessage struct {
	Text  string `json:"text"`
	Plain bool   `json:"plain,omitempty"`
}

// RetryAfterError is a platform's rate limit answer (HTTP 429 with
// retry_after, Slack's "ratelimited" with Retry-After).
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

var (
	// ErrTooLong: the platform refused the message as too long ("message is
	// too long", Discord 50035, Slack msg_too_long); it is split again.
	ErrTooLong = errors.New("message is too long")
	// ErrFormat: the platform could not parse the message's markup
	// ("can't parse entities"); it is sent again as plain text.
	ErrFormat = errors.New("message markup rejected")
	// ErrRevoked: the bot's token was rejected; the adapter stops.
	ErrRevoked = errors.New("bot token rejected")
	// ErrUndeliverable: the chat refuses messages from the bot (blocked,
	// removed, unknown chat); retrying soon will not help.
	ErrUndeliverable = errors.New("chat refuses messages")
)

// Incoming is a message a platform received.
type Incoming struct {
	// Chat is where replies go (the adapter's address).
	Chat string
	// Channel and Thread name the conversation for the session key;
	// Thread is "" outside threads.
	Channel, Thread string
	// User is the sender's platform user id; UserName is for display.
	User, UserName string
	// DM is set for a direct (private) chat.
	DM   bool
	Text string
}

// SessionKey names the conversation of in on platform, as Hermes Agent's
// gateway does: one session per DM chat, one per user in a group channel,
// one shared by everyone in a thread.
func SessionKey(platform string, in Incoming) string {
	base := "agent:main:" + platform + ":"
	switch {
	case in.DM:
		return base + "dm:" + in.Channel
	case in.Thread != "":
		return base + "group:" + in.Channel + ":" + in.Thread
	default:
		return base + "group:" + in.Channel + ":" + in.User
	}
}

// Authorization decides who may talk to the agent on one platform.
type Authorization struct {
	// Allowed holds user ids (<PLATFORM>_ALLOWED_USERS, else
	// GATEWAY_ALLOWED_USERS); AllowAll is GATEWAY_ALLOW_ALL_USERS (or
	// <PLATFORM>_ALLOW_ALL_USERS). With neither, everyone is refused.
	Allowed  map[string]bool
	AllowAll bool
	// Source names the variable Allowed came from, for the refusal text.
	Source string
	// Paired, when set, reports users approved by pairing
	// (hermes pairing approve).
	Paired func(user string) bool
}

// Allows reports whether user may talk to the agent.
func (a Authorization) Allows(user string) bool {
	return a.AllowAll || a.Allowed[user] || (a.Paired != nil && a.Paired(user))
}

// AuthorizationFromEnv reads the authorization chain for platform:
// <PLATFORM>_ALLOW_ALL_USERS → <PLATFORM>_ALLOWED_USERS →
// GATEWAY_ALLOWED_USERS → GATEWAY_ALLOW_ALL_USERS; default deny.
func AuthorizationFromEnv(platform string, getenv func(string) string) Authorization {
	p := strings.ToUpper(platform)
	a := Authorization{Allowed: map[string]bool{}, Source: p + "_ALLOWED_USERS"}
	list := getenv(p + "_ALLOWED_USERS")
	if list == "" {
		list = getenv("GATEWAY_ALLOWED_USERS")
	}
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			a.Allowed[f] = true
		}
	}
	a.AllowAll = truthy(getenv(p+"_ALLOW_ALL_USERS")) || truthy(getenv("GATEWAY_ALLOW_ALL_USERS"))
	return a
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// ChatConfig configures the chat core of one platform.
type ChatConfig struct {
	Auth Authorization
	// TypingEvery repeats the typing indicator while a turn runs (default 4 s).
	TypingEvery time.Duration
	// ToolProgress shows the turn's tool calls as one status message,
	// edited as calls start and end.
	ToolProgress bool
	// Home is HERMES_HOME: undelivered replies are kept in
	// HERMES_HOME/gateway/undelivered-<platform>.json unless Undelivered
	// is set or the session store is PostgreSQL (its delivery_obligations).
	Home string
	// Undelivered, when set, is the queue of kept replies (default: the
	// one internal/database.Outbox chooses for the session store).
	Undelivered outbox.Queue
	// Retry is the delivery retry policy (zero = defaults).
	Retry RetryPolicy
	// Warn receives one-line messages for the operator.
	Warn func(string)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Pairing, when set, gives unknown users in direct chats a pairing code
	// (Hermes' unauthorized_dm_behavior: pair) instead of a refusal, and
	// lets the users it approved in.
	Pairing Pairer
	// IgnoreUnknownDMs leaves direct messages of unknown users unanswered
	// (unauthorized_dm_behavior: ignore).
	IgnoreUnknownDMs bool
}

// Pairer hands out pairing codes and knows the approved users
// (pairing.Store).
type Pairer interface {
	Request(platform, user, name string) (code string, err error)
	IsApproved(platform, user string) bool
}

// Chat is the platform-independent part of a chat gateway: authorization,
// sessions, chat commands, approvals, progress and reliable delivery. An
// adapter calls Handle for each received message and Run while it runs.
type Chat struct {
	p       Platform
	rt      *session.Runtime
	cfg     ChatConfig
	refused sync.Map // user id → true once refused
	running sync.WaitGroup
	mu      sync.Mutex
	closing bool     // Run is waiting for the handlers: no new ones
	threads sync.Map // session keys of threads the bot takes part in
	out     outbox.Queue
	wake    chan struct{} // a reply was kept
	locks   chatLocks     // per-chat delivery order
	answers answerOrder
	arrived arrivals // per-chat order of messages into the session
}

// NewChat builds the chat core of platform p on rt. It loads the replies
// an earlier run could not deliver; Run delivers them.
func NewChat(rt *session.Runtime, p Platform, cfg ChatConfig) (*Chat, error) {
	if cfg.TypingEvery <= 0 {
		cfg.TypingEvery = 4 * time.Second
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	warn := cfg.Warn // platform errors may quote a token: never to the log
	cfg.Warn = func(s string) { warn(rt.Redactor().Redact(s)) }
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Retry = cfg.Retry.withDefaults()
	if cfg.Home == "" {
		cfg.Home = rt.Home()
	}
	if cfg.Pairing != nil && cfg.Auth.Paired == nil {
		name := p.Name()
		cfg.Auth.Paired = func(user string) bool { return cfg.Pairing.IsApproved(name, user) }
	}
	if len(cfg.Auth.Allowed) == 0 && !cfg.Auth.AllowAll {
		up := strings.ToUpper(p.Name())
		then := "every message will be refused"
		if cfg.Pairing != nil {
			then = "only users approved with `hermes pairing approve` may talk"
		}
		cfg.Warn(fmt.Sprintf("warning: %s: no user is allowed (set %s_ALLOWED_USERS, GATEWAY_ALLOWED_USERS or GATEWAY_ALLOW_ALL_USERS=true); %s", p.Name(), up, then))
	}
	c := &Chat{p: p, rt: rt, cfg: cfg}
	if err := c.openUndelivered(context.Background()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run retries undelivered replies until ctx ends, then waits for the
// handlers of received messages to finish.
func (c *Chat) Run(ctx context.Context) {
	c.retryLoop(ctx)
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.running.Wait()
}

// begin registers a handler; it reports false once Run is draining.
func (c *Chat) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.running.Add(1)
	return true
}

// Warn tells the operator msg, with the process's secrets redacted.
func (c *Chat) Warn(msg string) { c.cfg.Warn(msg) }

// Undelivered is how many replies wait for redelivery.
func (c *Chat) Undelivered() int {
	n, err := c.out.Len(context.Background(), c.p.Name())
	if err != nil {
		c.cfg.Warn(fmt.Sprintf("%s: reading the undelivered replies: %v", c.p.Name(), err))
	}
	return n
}

// Receive takes one received message. Adapters call it on the goroutine
// that reads the platform's updates, in the platform's order, one message
// at a time; it returns at once. The message is answered on a goroutine
// of its own, and enters its chat's session after the chat's earlier
// messages (per-chat FIFO), so their turns and answers keep that order.
func (c *Chat) Receive(ctx context.Context, in Incoming) {
	if strings.TrimSpace(in.Text) == "" || in.User == "" {
		return
	}
	if in.Thread != "" && c.cfg.Auth.Allows(in.User) {
		c.threads.Store(SessionKey(c.p.Name(), in), true)
	}
	t := c.arrived.take(in.Chat)
	go c.handle(ctx, in, t)
}

// Handle answers one received message and returns when the answer was
// delivered (or kept for redelivery). It keeps the order of the messages
// of a chat only when called one after another; adapters use Receive.
// The reply outlives ctx's cancellation: a stopping gateway drains.
func (c *Chat) Handle(ctx context.Context, in Incoming) {
	if strings.TrimSpace(in.Text) == "" || in.User == "" {
		return
	}
	c.handle(ctx, in, c.arrived.take(in.Chat))
}

// handle answers in once the chat's earlier messages entered their
// session; t is released as soon as in entered its own (or was refused).
func (c *Chat) handle(ctx context.Context, in Incoming, t *arrival) {
	defer t.release()
	if !c.begin() {
		c.cfg.Warn(fmt.Sprintf("%s: a message from user %s arrived while the gateway stops; it is not answered", c.p.Name(), in.User))
		return
	}
	defer c.running.Done()
	t.wait()
	ctx = context.WithoutCancel(ctx)
	if !c.cfg.Auth.Allows(in.User) {
		t.release()
		c.refuse(ctx, in)
		return
	}
	key := SessionKey(c.p.Name(), in)
	if in.Thread != "" {
		c.threads.Store(key, true)
	}
	if strings.HasPrefix(in.Text, "/") {
		c.command(ctx, in.Chat, key, in.Text)
		return
	}
	sess, err := c.open(ctx, key, false)
	if err != nil {
		t.release()
		c.say(ctx, in.Chat, "Sorry, the session could not be opened: "+err.Error())
		return
	}
	// A clarify question waits: this message is its answer, not a new turn.
	if q := sess.PendingQuestion(); q != nil && sess.Answer(q.ID, in.Text) {
		t.release()
		return
	}
	c.converse(ctx, in.Chat, sess, in.Text, t.release)
}

// Engaged reports whether the bot takes part in in's thread (it was
// mentioned there since the gateway started): adapters that answer group
// messages only when mentioned answer every message of such a thread.
func (c *Chat) Engaged(in Incoming) bool {
	_, ok := c.threads.Load(SessionKey(c.p.Name(), in))
	return in.Thread != "" && ok
}

// refuse answers an unknown user once (or with a pairing code in a DM).
func (c *Chat) refuse(ctx context.Context, in Incoming) {
	if in.DM && c.cfg.IgnoreUnknownDMs {
		return
	}
	if in.DM && c.cfg.Pairing != nil {
		code, err := c.cfg.Pairing.Request(c.p.Name(), in.User, in.UserName)
		if err != nil {
			c.cfg.Warn(fmt.Sprintf("%s: pairing: %v", c.p.Name(), err))
		} else {
			if code != "" {
				c.say(ctx, in.Chat, "Sorry, you are not allowed to use this agent yet. To ask for access, give its operator this pairing code: "+
					code+"\n(they run: hermes pairing approve "+c.p.Name()+" "+code+"; it expires in an hour)")
			}
			return
		}
	}
	if _, seen := c.refused.LoadOrStore(in.User, true); seen {
		return
	}
	src := c.cfg.Auth.Source
	if src == "" {
		src = strings.ToUpper(c.p.Name()) + "_ALLOWED_USERS"
	}
	c.say(ctx, in.Chat, "Sorry, you are not allowed to use this agent. Ask its operator to add your user id ("+
		in.User+") to "+src+".")
}

func (c *Chat) open(ctx context.Context, key string, fresh bool) (*session.Session, error) {
	return c.rt.Open(ctx, session.OpenOptions{Key: key, New: fresh, Source: c.p.Name(), Platform: c.p.Name()})
}

// say sends one of the gateway's own texts (plain, never markup).
func (c *Chat) say(ctx context.Context, chat, text string) {
	c.deliver(ctx, chat, OutMessage{Text: text, Plain: true})
}
