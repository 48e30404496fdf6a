package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/lazyregexp"
	"github.com/hermes-go/hermes/internal/llm"
)

// send_message limits: a message is bounded before it is split into the
// platform's parts (Telegram 4096 units, Discord 2000, Slack 40,000), and a
// session sends at most MaxMessagesPerSession, so a looping model cannot
// flood a chat.
const (
	MaxSendMessageBytes   = 16 << 10
	MaxMessagesPerSession = 30
)

// Messenger sends text to a chat of a platform: platform is "telegram",
// "discord" or "slack", chatID the platform's chat or channel id, threadID
// "" or a thread (topic) in it. The gateway's running chats implement it
// (their retries and undelivered-reply queue); outside a gateway, the
// platforms reachable with a bot token (cron.Deliverer has this shape).
type Messenger interface {
	Deliver(ctx context.Context, platform, chatID, threadID, text string) error
}

// SendMessageOptions configure send_message. A session may message its
// own chat (Origin), the platforms' home channels (Home) and the chats the
// operator listed (Allowed, config.yaml messaging.allowed_targets) — never
// another chat a user names.
type SendMessageOptions struct {
	Messenger Messenger
	// Origin returns the chat of a session as "<platform>:<chat_id>[:<thread_id>]"
	// ("" for the CLI and the API server).
	Origin func(sessionID string) string
	// Home maps a platform to its home channel target
	// (<PLATFORM>_HOME_CHANNEL: "telegram" → "telegram:-100123").
	Home map[string]string
	// Allowed are further targets, "<platform>:<chat_id>[:<thread_id>]".
	Allowed []string
	// Redact removes known secret values from the text before it leaves.
	Redact func(string) string
}

// SendMessage is the `send_message` tool (Hermes's messaging toolset:
// action send or list, target, message): it sends a text message to a
// chat the session may reach, for cron jobs and long tasks that report
// back. It is given to sessions only where a platform can be reached.
type SendMessage struct {
	o    SendMessageOptions
	sent *counter
}

// NewSendMessage returns send_message sending through o.Messenger.
func NewSendMessage(o SendMessageOptions) *SendMessage {
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	return &SendMessage{o: o, sent: newCounter()}
}

// targetPattern matches "<platform>:<chat_id>[:<thread_id>]", the shape
// of cron's deliver targets.
var targetPattern = lazyregexp.New(`^[a-z][a-z0-9_]*:[^:\s]+(:[^:\s]+)?$`)

// Spec implements Tool.
func (m *SendMessage) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "send_message",
		Description: "Send a text message to a chat: this conversation's own chat (target \"origin\", the default), a " +
			"platform's home channel (target \"telegram\", \"discord\" or \"slack\") or a chat the operator allowed " +
			"(\"telegram:<chat_id>[:<thread_id>]\"). Use it to report progress or results of long or scheduled work. " +
			"action \"list\" shows the targets you may use.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["send","list"],"description":"send (default) or list the reachable targets"},` +
			`"target":{"type":"string","description":"origin (default), a platform name for its home channel, or platform:chat_id[:thread_id]"},` +
			`"message":{"type":"string","description":"The text to send (for send)"}}}`),
	}
}

// Toolset implements Tool.
func (m *SendMessage) Toolset() string { return "messaging" }

// Parallel implements Tool: messages keep the order the model sent them in.
func (m *SendMessage) Parallel() bool { return false }

// Run implements Tool.
func (m *SendMessage) Run(ctx context.Context, call Call) Result {
	var args struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		Message string `json:"message"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("send_message: %v", err)
	}
	switch strings.TrimSpace(args.Action) {
	case "list":
		return JSON(m.targets(call.SessionID))
	case "", "send":
	default:
		return Errorf("send_message: action %q: use send or list", args.Action)
	}
	text := strings.TrimSpace(args.Message)
	switch {
	case text == "":
		return Errorf("send_message: message is empty")
	case len(text) > MaxSendMessageBytes:
		return Errorf("send_message: the message is %d bytes; send at most %d (write long output to a file and summarise it)", len(text), MaxSendMessageBytes)
	}
	target, err := m.resolve(call.SessionID, strings.TrimSpace(args.Target))
	if err != nil {
		return Errorf("send_message: %v", err)
	}
	if !m.sent.take(call.SessionID, MaxMessagesPerSession) {
		return Errorf("send_message: this session has sent %d messages, the limit; answer in the conversation instead", MaxMessagesPerSession)
	}
	platform, rest, _ := strings.Cut(target, ":")
	chat, thread, _ := strings.Cut(rest, ":")
	if err := m.o.Messenger.Deliver(ctx, platform, chat, thread, m.o.Redact(text)); err != nil {
		return Errorf("send_message: sending to %s: %v", target, m.o.Redact(err.Error()))
	}
	return JSON(map[string]any{"success": true, "target": target})
}

// reachable is what `list` answers.
type reachable struct {
	Origin  string            `json:"origin,omitempty"`
	Home    map[string]string `json:"home_channels,omitempty"`
	Allowed []string          `json:"allowed_targets,omitempty"`
	Note    string            `json:"note,omitempty"`
}

func (m *SendMessage) targets(sessionID string) reachable {
	r := reachable{Home: m.o.Home, Allowed: m.o.Allowed}
	if m.o.Origin != nil {
		r.Origin = m.o.Origin(sessionID)
	}
	if r.Origin == "" && len(r.Home) == 0 && len(r.Allowed) == 0 {
		r.Note = "no chat is reachable from this session: it has no chat of its own, and no home channel (<PLATFORM>_HOME_CHANNEL) or messaging.allowed_targets is configured"
	}
	return r
}

// resolve turns a target as the model gave it into a reachable
// "<platform>:<chat_id>[:<thread_id>]", or says why it is not one.
func (m *SendMessage) resolve(sessionID, target string) (string, error) {
	r := m.targets(sessionID)
	switch {
	case target == "" || target == "origin":
		if r.Origin == "" {
			return "", fmt.Errorf("this session has no chat of its own (CLI, API server); name a target from action list")
		}
		return r.Origin, nil
	case !strings.Contains(target, ":"):
		home, ok := r.Home[strings.ToLower(target)]
		if !ok {
			return "", fmt.Errorf("%s has no home channel; the operator sets %s_HOME_CHANNEL", target, strings.ToUpper(target))
		}
		return home, nil
	case !targetPattern().MatchString(target):
		return "", fmt.Errorf("target %q: use origin, a platform name, or platform:chat_id[:thread_id]", target)
	case target == r.Origin || slices.Contains(r.Allowed, target):
		return target, nil
	}
	for _, home := range r.Home {
		if target == home {
			return target, nil
		}
	}
	return "", fmt.Errorf("%s is not a chat this session may message: its own chat, the home channels and messaging.allowed_targets in config.yaml (see action list)", target)
}

// counter counts calls per session.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func newCounter() *counter { return &counter{n: map[string]int{}} }

// take counts one call of session id and reports whether it is within
// limit.
func (c *counter) take(id string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[id] >= limit {
		return false
	}
	c.n[id]++
	return true
}
