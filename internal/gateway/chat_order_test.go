package gateway

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/gateway/discordtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store"
)

// The ordering tests send bursts of messages to many chats at once, 20 ms
// apart, against a model taking about 0.3 s per answer (issue 24: three
// messages to one chat were answered m1, m0, m2, and state.db stored them
// in that order). Every chat's messages must enter its session, and be
// answered, in the order they arrived.
const (
	orderChats = 12
	orderBurst = 3
)

// slowEcho answers "echo: <last user message>" in pieces, slowly.
func slowEcho(r llmtest.Request) llmtest.Turn {
	return llmtest.Turn{Text: "echo: " + lastUser(r), ChunkSize: 3, FrameEvery: 60 * time.Millisecond}
}

var burstText = regexp.MustCompile(`c\d+ m\d+`)

// sendBursts sends orderBurst messages to each of orderChats chats, 20 ms
// apart, all chats at once; send gets the chat's index and the text.
func sendBursts(send func(chat int, text string)) {
	var wg sync.WaitGroup
	for c := range orderChats {
		wg.Go(func() {
			for m := range orderBurst {
				if m > 0 {
					time.Sleep(20 * time.Millisecond)
				}
				send(c, fmt.Sprintf("c%d m%d", c, m))
			}
		})
	}
	wg.Wait()
}

// waitEchoes waits until sent (a WaitSent of one chat) holds orderBurst
// answers and returns their texts in delivery order; queued notices are
// left out.
func waitEchoes(t *testing.T, wait func(n int) []string) []string {
	t.Helper()
	for n := orderBurst; ; {
		var echoes []string
		got := wait(n)
		for _, text := range got {
			if strings.HasPrefix(text, "echo: ") {
				echoes = append(echoes, burstText.FindString(text))
			}
		}
		if len(echoes) >= orderBurst || len(got) < n {
			return echoes
		}
		n = len(got) + 1
	}
}

// wantOrder checks each chat's answers and the user messages state.db
// stored for it against the arrival order.
func wantOrder(t *testing.T, rt *session.Runtime, source string, answers map[int][]string) {
	t.Helper()
	want := func(c int) string {
		var w []string
		for m := range orderBurst {
			w = append(w, fmt.Sprintf("c%d m%d", c, m))
		}
		return strings.Join(w, ",")
	}
	for c := range orderChats {
		if got := strings.Join(answers[c], ","); got != want(c) {
			t.Errorf("chat %d was answered %s, want %s", c, got, want(c))
		}
	}
	ctx := context.Background()
	list, err := rt.Store().List(ctx, store.ListOptions{Source: source, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string][]string{}
	for _, s := range list {
		msgs, err := rt.Store().Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Role == "user" {
				text := burstText.FindString(m.Content)
				chat, _, _ := strings.Cut(text, " ")
				stored[chat] = append(stored[chat], text)
			}
		}
	}
	bad := 0
	for c := range orderChats {
		got := stored[fmt.Sprintf("c%d", c)]
		if strings.Join(got, ",") != want(c) {
			bad++
			t.Errorf("state.db holds chat %d's messages as %v", c, got)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d chats were stored out of arrival order", bad, orderChats)
	}
}

func TestTelegramChatMessagesKeepArrivalOrder(t *testing.T) {
	allowed := map[int64]bool{}
	for c := range orderChats {
		allowed[int64(1000+c)] = true
	}
	w := startTelegramWith(t, "", allowed, slowEcho)
	defer w.stop()
	sendBursts(func(c int, text string) { w.fake.SendText(int64(1000+c), int64(1000+c), "private", text) })
	answers := map[int][]string{}
	for c := range orderChats {
		answers[c] = waitEchoes(t, func(n int) []string {
			var texts []string
			for _, m := range w.fake.WaitSent(t, int64(1000+c), n) {
				texts = append(texts, m.Text)
			}
			return texts
		})
	}
	wantOrder(t, w.tg.chat.rt, "telegram", answers)
}

func TestDiscordChatMessagesKeepArrivalOrder(t *testing.T) {
	fake := discordtest.New("DISCORD.TEST.TOKEN")
	t.Cleanup(fake.Close)
	var users []string
	for c := range orderChats {
		fake.AddChannel(fmt.Sprintf("o%d", c), discordtest.DM, "", "")
		users = append(users, fmt.Sprint(500+c))
	}
	w := startDiscordWith(t, fake, "", slowEcho, users...)
	sendBursts(func(c int, text string) { fake.SendMessage(fmt.Sprint(500+c), fmt.Sprintf("o%d", c), text) })
	answers := map[int][]string{}
	for c := range orderChats {
		answers[c] = waitEchoes(t, func(n int) []string {
			var texts []string
			for _, m := range fake.WaitSent(t, fmt.Sprintf("o%d", c), n) {
				texts = append(texts, m.Content)
			}
			return texts
		})
	}
	wantOrder(t, w.dc.chat.rt, "discord", answers)
}

func TestSlackChatMessagesKeepArrivalOrder(t *testing.T) {
	fake := newSlackFake(t)
	var users []string
	for c := range orderChats {
		users = append(users, fmt.Sprintf("U%d", c))
	}
	w := startSlackWith(t, fake, "", slowEcho, users...)
	sendBursts(func(c int, text string) { fake.SendMessage(fmt.Sprintf("U%d", c), fmt.Sprintf("D%d", c), "", text) })
	answers := map[int][]string{}
	for c := range orderChats {
		answers[c] = waitEchoes(t, func(n int) []string {
			var texts []string
			for _, m := range fake.WaitSent(t, fmt.Sprintf("D%d", c), n) {
				texts = append(texts, m.Text)
			}
			return texts
		})
	}
	wantOrder(t, w.sl.chat.rt, "slack", answers)
}
