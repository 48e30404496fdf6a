package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

func TestSessionKeysFollowHermes(t *testing.T) {
	cases := []struct {
		in   Incoming
		want string
	}{
		{Incoming{Channel: "42", User: "42", DM: true}, "agent:main:telegram:dm:42"},
		{Incoming{Channel: "-100", User: "7"}, "agent:main:telegram:group:-100:7"},
		{Incoming{Channel: "-100", Thread: "9", User: "7"}, "agent:main:telegram:group:-100:9"},
		{Incoming{Channel: "-100", Thread: "9", User: "8"}, "agent:main:telegram:group:-100:9"},
	}
	for _, c := range cases {
		if got := SessionKey("telegram", c.in); got != c.want {
			t.Errorf("%+v: %s, want %s", c.in, got, c.want)
		}
	}
}

func TestAuthorizationChain(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	a := AuthorizationFromEnv("discord", env(map[string]string{"DISCORD_ALLOWED_USERS": "1, 2", "GATEWAY_ALLOWED_USERS": "3"}))
	if !a.Allows("1") || !a.Allows("2") || a.Allows("3") {
		t.Fatalf("platform list must win over the gateway list: %+v", a)
	}
	a = AuthorizationFromEnv("discord", env(map[string]string{"GATEWAY_ALLOWED_USERS": "3"}))
	if !a.Allows("3") || a.Allows("1") {
		t.Fatalf("gateway list: %+v", a)
	}
	if a := AuthorizationFromEnv("slack", env(nil)); a.Allows("U1") {
		t.Fatal("nothing configured must deny")
	}
	if a := AuthorizationFromEnv("slack", env(map[string]string{"GATEWAY_ALLOW_ALL_USERS": "true"})); !a.Allows("U1") {
		t.Fatal("GATEWAY_ALLOW_ALL_USERS must allow")
	}
}

// A broken undelivered-replies file stops the start, naming the file,
// and is left as it is (it holds replies).
func TestChatRefusesBrokenUndeliveredFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "gateway", "undelivered-mem.json")
	_ = os.MkdirAll(filepath.Dir(path), 0o700)
	_ = os.WriteFile(path, []byte("{"), 0o600)
	rt := newRuntime(t, llmtest.NewServer(t), home)
	_, err := NewChat(rt, &memPlatform{}, ChatConfig{Auth: Authorization{AllowAll: true}})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("NewChat with a broken %s = %v; want an error naming it", path, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{" {
		t.Fatalf("the broken file was rewritten to %q", b)
	}
}

// memPlatform is a Platform in memory; Send blocks for chats in hold.
type memPlatform struct {
	mu   sync.Mutex
	sent map[string][]string
	hold map[string]chan struct{}
}

func (m *memPlatform) Name() string { return "mem" }
func (m *memPlatform) Limit() int   { return 4096 }
func (m *memPlatform) Send(_ context.Context, chat string, msg OutMessage) (string, error) {
	m.mu.Lock()
	h := m.hold[chat]
	m.mu.Unlock()
	if h != nil {
		<-h
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent[chat] = append(m.sent[chat], msg.Text)
	return chat, nil
}
func (m *memPlatform) Edit(context.Context, string, string, OutMessage) error { return nil }
func (m *memPlatform) Typing(context.Context, string) error                   { return nil }

// A delivery stuck on one chat (a long rate limit) holds up no other chat.
func TestDeliveryToOneChatDoesNotWaitForAnother(t *testing.T) {
	rt := newRuntime(t, llmtest.NewServer(t), "")
	p := &memPlatform{sent: map[string][]string{}, hold: map[string]chan struct{}{}}
	for i := range 100 {
		p.hold["slow"+itoa(i)] = make(chan struct{})
	}
	c, err := NewChat(rt, p, ChatConfig{Auth: Authorization{AllowAll: true}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { _ = c.Deliver(context.Background(), "slow"+itoa(i), "held") })
	}
	done := make(chan struct{})
	go func() { _ = c.Deliver(context.Background(), "fast", "through"); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatal("a delivery to another chat waited")
	}
	for i := range 100 {
		close(p.hold["slow"+itoa(i)])
	}
	wg.Wait()
}
