package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/hermes-go/hermes/internal/session"
)

// BenchmarkKeystrokeDuringStream is the in-process cost of a keystroke
// while a 100 KB markdown answer streams: per op, one 256-byte delta
// arrives (Update), a key is pressed (Update) and the frame is drawn
// (View), as bubbletea does for each message. The end-to-end latency on a
// terminal is measured by bench/tui.
//
// Run: go test ./internal/tui -run '^$' -bench KeystrokeDuringStream
func BenchmarkKeystrokeDuringStream(b *testing.B) {
	w := newWorld(b)
	m := New(context.Background(), w.options(b))
	defer m.close()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	var text strings.Builder
	words := []string{"lorem", "ipsum", "**dolor**", "sit", "amet", "consectetur", "`adipiscing`", "elit"}
	for i := 0; text.Len() < 100<<10; i++ {
		text.WriteString(words[i%len(words)] + " ")
		if i%60 == 59 {
			text.WriteString("\n\n")
		}
	}
	answer := text.String()
	m.onEvent(session.Event{Kind: session.TurnStart, TurnID: "t1"})
	b.ResetTimer()
	pos := 0
	for i := range b.N {
		if pos >= len(answer) {
			pos = 0
		}
		end := min(pos+256, len(answer))
		m.onEvent(session.Event{Kind: session.TextDelta, TurnID: "t1", Text: answer[pos:end]})
		pos = end
		m.Update(tea.KeyPressMsg{Code: rune('a' + i%26), Text: string(rune('a' + i%26))})
		_ = m.View()
		if i%100 == 99 {
			m.input.Reset()
		}
	}
}
