package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestTallApprovalKeepsDangerInView: a command padded with harmless
// lines past the terminal's height does not push the danger line and
// the dangerous first line off the screen (the terminal keeps a frame's
// last rows): the box fits the screen with the head and tail of the
// command, and the whole command is printed to the scrollback.
func TestTallApprovalKeepsDangerInView(t *testing.T) {
	cmd := `rm -rf ~/important` + strings.Repeat(`\necho harmless`, 60)
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"` + cmd + `"}`}}},
		llmtest.Turn{Text: "not done"},
	)
	const height = 20
	tm, out := start(t, w.options(t), 80, height)
	tm.Type("clean")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	f := waitFrame(t, tm, "eny")
	if n := strings.Count(strings.TrimRight(f, "\n"), "\n") + 1; n > height {
		t.Errorf("the frame has %d rows on a %d-row terminal", n, height)
	}
	for _, want := range []string{"recursive rm of ~/important", "rm -rf ~/important", "more lines (the whole command is printed above)", "[d]eny"} {
		if !strings.Contains(f, want) {
			t.Errorf("the approval lacks %q:\n%s", want, f)
		}
	}
	out.wait(t, "command to approve:")
	tm.Type("d")
	// The whole command reaches the scrollback (prints are queued: the
	// answer can show in the live region first).
	out.waitCount(t, "echo harmless", 60)
	out.wait(t, "not done")
}
