package tui

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// rawOutput runs cmd and every command it batches or sequences, feeds
// the reflowMsgs they send back to m, and returns what all that asks
// bubbletea to write raw, in order.
func rawOutput(m *Model, cmd tea.Cmd) string {
	if cmd == nil {
		return ""
	}
	var out strings.Builder
	switch msg := cmd().(type) {
	case tea.RawMsg:
		out.WriteString(fmt.Sprint(msg.Msg))
	case reflowMsg:
		out.WriteString(rawOutput(m, updateCmd(m, msg)))
	case tea.BatchMsg:
		for _, c := range msg {
			out.WriteString(rawOutput(m, c))
		}
	default:
		v := reflect.ValueOf(msg) // bubbletea's unexported sequenceMsg, a []tea.Cmd
		if v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeFor[tea.Cmd]() {
			for i := range v.Len() {
				out.WriteString(rawOutput(m, v.Index(i).Interface().(tea.Cmd)))
			}
		}
	}
	return out.String()
}

// A change of width (terminals re-wrap the rows on screen, the live
// region's too) scrolls the whole screen into the scrollback from its
// last row, never erasing it, and repaints at the top, once the size has
// settled: the steps of a drag scroll one screen, not one each; a change
// of height alone leaves the screen to bubbletea.
func TestWidthChangeScrollsTheScreenIntoTheScrollback(t *testing.T) {
	w := newWorld(t)
	m := New(context.Background(), w.options(t))
	defer m.close()
	if raw := rawOutput(m, updateCmd(m, tea.WindowSizeMsg{Width: 120, Height: 40})); raw != "" {
		t.Fatalf("the first size clears the screen: %q", raw)
	}
	if raw := rawOutput(m, updateCmd(m, tea.WindowSizeMsg{Width: 120, Height: 30})); raw != "" {
		t.Fatalf("a change of height alone clears the screen: %q", raw)
	}
	want := "\x1b[14;1H" + strings.Repeat("\n", 14) + "\x1b[H"
	if raw := rawOutput(m, updateCmd(m, tea.WindowSizeMsg{Width: 100, Height: 14})); raw != want {
		t.Fatalf("after 120 → 100 columns the TUI wrote %q, want %q (14 rows scrolled away from the last row, then home)", raw, want)
	}
	var drag []tea.Cmd // a drag's steps, each before the previous settled
	for width := 99; width >= 90; width-- {
		drag = append(drag, updateCmd(m, tea.WindowSizeMsg{Width: width, Height: 12}))
	}
	want = "\x1b[12;1H" + strings.Repeat("\n", 12) + "\x1b[H"
	if raw := rawOutput(m, tea.Batch(drag...)); raw != want {
		t.Fatalf("after a drag from 100 to 90 columns the TUI wrote %q, want %q (one screen scrolled away)", raw, want)
	}
}

// updateCmd is Update's command.
func updateCmd(m *Model, msg tea.Msg) tea.Cmd {
	_, cmd := m.Update(msg)
	return cmd
}
