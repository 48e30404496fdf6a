package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// sentTo records what a Messenger was asked to send.
type sentTo struct {
	got  []string
	fail error
}

func (s *sentTo) Deliver(_ context.Context, platform, chatID, threadID, text string) error {
	if s.fail != nil {
		return s.fail
	}
	s.got = append(s.got, platform+"|"+chatID+"|"+threadID+"|"+text)
	return nil
}

func newTestSendMessage(m Messenger) *SendMessage {
	return NewSendMessage(SendMessageOptions{
		Messenger: m,
		Origin: func(id string) string {
			if id == "chat-session" {
				return "telegram:42"
			}
			return ""
		},
		Home:    map[string]string{"slack": "slack:C0HOME"},
		Allowed: []string{"telegram:-100777:9"},
		Redact:  func(s string) string { return strings.ReplaceAll(s, "sk-secret-value", "[REDACTED]") },
	})
}

func sendArgs(t *testing.T, v map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSendMessageReachesOnlyTheSessionsChats(t *testing.T) {
	m := &sentTo{}
	tl := newTestSendMessage(m)
	ctx := context.Background()
	ok := []struct {
		session, target, want string
	}{
		{"chat-session", "", "telegram|42||hello"},
		{"chat-session", "origin", "telegram|42||hello"},
		{"chat-session", "telegram:42", "telegram|42||hello"},
		{"api-session", "slack", "slack|C0HOME||hello"},
		{"api-session", "SLACK", "slack|C0HOME||hello"},
		{"api-session", "slack:C0HOME", "slack|C0HOME||hello"},
		{"api-session", "telegram:-100777:9", "telegram|-100777|9|hello"},
	}
	for _, c := range ok {
		m.got = nil
		r := tl.Run(ctx, Call{SessionID: c.session, Args: sendArgs(t, map[string]any{"target": c.target, "message": " hello "})})
		if r.IsError || len(m.got) != 1 || m.got[0] != c.want {
			t.Errorf("%s → %q: result %q, sent %q; want %q", c.session, c.target, r.Content, m.got, c.want)
		}
	}
	refused := []struct {
		session, target, why string
	}{
		{"chat-session", "telegram:43", "not a chat this session may message"},
		{"chat-session", "telegram:-100777", "not a chat this session may message"}, // the allowed entry names a thread
		{"api-session", "", "no chat of its own"},
		{"api-session", "origin", "no chat of its own"},
		{"api-session", "discord", "DISCORD_HOME_CHANNEL"},
		{"api-session", "telegram:42 ; rm", "use origin, a platform name"},
		{"api-session", "Telegram:42", "use origin, a platform name"},
	}
	for _, c := range refused {
		m.got = nil
		r := tl.Run(ctx, Call{SessionID: c.session, Args: sendArgs(t, map[string]any{"target": c.target, "message": "hello"})})
		if !r.IsError || !strings.Contains(r.Content, c.why) || len(m.got) != 0 {
			t.Errorf("%s → %q: result %q, sent %q; want refusal with %q", c.session, c.target, r.Content, m.got, c.why)
		}
	}
}

func TestSendMessageBoundsAndRedacts(t *testing.T) {
	m := &sentTo{}
	tl := newTestSendMessage(m)
	ctx := context.Background()
	call := func(v map[string]any) Result {
		return tl.Run(ctx, Call{SessionID: "chat-session", Args: sendArgs(t, v)})
	}
	if r := call(map[string]any{"message": "  "}); !r.IsError || !strings.Contains(r.Content, "empty") {
		t.Errorf("empty message: %q", r.Content)
	}
	if r := call(map[string]any{"message": strings.Repeat("x", MaxSendMessageBytes+1)}); !r.IsError || !strings.Contains(r.Content, "bytes") {
		t.Errorf("oversized message: %q", r.Content)
	}
	if r := call(map[string]any{"action": "shout", "message": "x"}); !r.IsError {
		t.Errorf("unknown action accepted: %q", r.Content)
	}
	if r := call(map[string]any{"message": "key is sk-secret-value"}); r.IsError || m.got[0] != "telegram|42||key is [REDACTED]" {
		t.Fatalf("secret not redacted: %q %q", r.Content, m.got)
	}
	for i := 1; i < MaxMessagesPerSession; i++ {
		if r := call(map[string]any{"message": "tick"}); r.IsError {
			t.Fatalf("message %d refused: %q", i+1, r.Content)
		}
	}
	if r := call(map[string]any{"message": "one too many"}); !r.IsError || !strings.Contains(r.Content, "limit") || len(m.got) != MaxMessagesPerSession {
		t.Errorf("message past the limit: %q, %d sent", r.Content, len(m.got))
	}
	// Another session has its own count.
	if r := tl.Run(ctx, Call{SessionID: "api-session", Args: sendArgs(t, map[string]any{"target": "slack", "message": "x"})}); r.IsError {
		t.Errorf("another session's first message refused: %q", r.Content)
	}
}

func TestSendMessageListAndDeliveryErrors(t *testing.T) {
	m := &sentTo{fail: errors.New("chat not found (token sk-secret-value)")}
	tl := newTestSendMessage(m)
	ctx := context.Background()
	r := tl.Run(ctx, Call{SessionID: "chat-session", Args: sendArgs(t, map[string]any{"action": "list"})})
	var got reachable
	if err := json.Unmarshal([]byte(r.Content), &got); err != nil || got.Origin != "telegram:42" || got.Home["slack"] != "slack:C0HOME" || len(got.Allowed) != 1 {
		t.Fatalf("list: %q (%v)", r.Content, err)
	}
	r = tl.Run(ctx, Call{SessionID: "chat-session", Args: sendArgs(t, map[string]any{"message": "x"})})
	if !r.IsError || !strings.Contains(r.Content, "chat not found") || strings.Contains(r.Content, "sk-secret-value") {
		t.Errorf("delivery error: %q", r.Content)
	}
	bare := NewSendMessage(SendMessageOptions{Messenger: m})
	r = bare.Run(ctx, Call{SessionID: "s", Args: sendArgs(t, map[string]any{"action": "list"})})
	if !strings.Contains(r.Content, "no chat is reachable") {
		t.Errorf("list with nothing reachable: %q", r.Content)
	}
}
