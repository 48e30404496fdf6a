package tui

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
)

// exchange sends text in s and waits for the turn to end.
func exchange(t *testing.T, s *session.Session, text string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.Send(ctx, text, session.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRecapRendersMarkdown: the recap of a resumed session shows its
// messages rendered as markdown (bold without asterisks, a code block
// behind its gutter), folded to their first lines (it showed the raw
// "**42**" and "```python def …").
func TestRecapRendersMarkdown(t *testing.T) {
	answer := "The answer is **42**.\n\n```python\ndef answer():\n    return 42\n\nprint(answer())\n```\n"
	w := newWorld(t, llmtest.Turn{Text: answer})
	exchange(t, w.sess, "what is **6×7**?")
	_, out := start(t, w.options(t), 80, 24)
	out.wait(t, "── resumed")
	out.wait(t, "more line")
	s := out.String()
	for _, want := range []string{"› what is 6×7?", "  The answer is 42.", "╭ python", "│ def answer():", "  … 3 more lines"} {
		if !strings.Contains(s, want) {
			t.Errorf("the recap lacks %q:\n%s", want, s)
		}
	}
	for _, raw := range []string{"**", "```", "return 42"} {
		if strings.Contains(s, raw) {
			t.Errorf("the recap shows %q (raw markdown, or not folded):\n%s", raw, s)
		}
	}
}

// TestRecapShowsLastTenExchanges: a resumed session's recap shows its last
// ten exchanges, as Hermes' resume panel does (it showed three).
func TestRecapShowsLastTenExchanges(t *testing.T) {
	var turns []llmtest.Turn
	for i := 1; i <= 12; i++ {
		turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("answer %02d", i)})
	}
	w := newWorld(t, turns...)
	for i := 1; i <= 12; i++ {
		exchange(t, w.sess, fmt.Sprintf("question %02d", i))
	}
	_, out := start(t, w.options(t), 80, 60)
	out.wait(t, "last 10 exchanges")
	out.wait(t, "answer 12")
	s := out.String()
	for i := 3; i <= 12; i++ {
		for _, want := range []string{fmt.Sprintf("› question %02d", i), fmt.Sprintf("  answer %02d", i)} {
			if !strings.Contains(s, want) {
				t.Errorf("the recap lacks %q:\n%s", want, s)
			}
		}
	}
	for _, old := range []string{"question 01", "question 02", "answer 02"} {
		if strings.Contains(s, old) {
			t.Errorf("the recap shows %q, older than the last ten exchanges:\n%s", old, s)
		}
	}
}

// TestResumeLoadsTokenCounts: after /resume the status bar shows the
// resumed session's ↑/↓ token counts, as /usage does (it dropped them).
func TestResumeLoadsTokenCounts(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "earlier", Usage: llmUsage(1200, 34)})
	exchange(t, w.sess, "an earlier question")
	old := w.sess.ID()
	fresh, err := w.rt.Open(context.Background(), session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.sess = fresh
	tm, out := start(t, w.options(t), 120, 24)
	if f := waitFrame(t, tm, "fake-model │"); strings.Contains(f, "↑") {
		t.Fatalf("a new session shows token counts:\n%s", f)
	}
	send(tm, "/resume "+old)
	out.wait(t, "resumed session "+old)
	waitFrame(t, tm, "↑1.2k ↓34")
	send(tm, "/usage")
	out.wait(t, "input 1200 · output 34")
}

// TestToolOutputKeepsSpaces: a tool's output lines keep their runs of
// spaces and tabs (the columns of `ls -la` lost their alignment); the
// one-line preview of the command may squeeze them.
func TestToolOutputKeepsSpaces(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"printf 'total    4\\ndrwxr-xr-x  2 root\\tx\\n'"}`}}},
		llmtest.Turn{Text: "listed"},
	)
	o := w.options(t)
	o.Verbose = true
	tm, out := start(t, o, 100, 24)
	send(tm, "list")
	out.waitAll(t, "listed", "│ total    4", "│ drwxr-xr-x  2 root      x")
	s := out.String()
	for _, want := range []string{"│ total    4", "│ drwxr-xr-x  2 root      x"} {
		if !strings.Contains(s, want) {
			t.Errorf("the tool output lacks %q:\n%s", want, s)
		}
	}
}

// TestExitPrintsResumeHint: leaving a session with messages prints how
// to resume it (as Hermes does); leaving an empty one prints nothing.
func TestExitPrintsResumeHint(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "earlier"})
	exchange(t, w.sess, "a question")
	hint := "Resume this session with: hermes --resume " + w.sess.ID() + "\n"
	var out strings.Builder
	if err := Run(context.Background(), w.options(t), strings.NewReader("\x04"), &out, tea.WithWindowSize(80, 24)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), hint) {
		t.Errorf("leaving did not print %q:\n%q", hint, out.String())
	}

	empty, err := w.rt.Open(context.Background(), session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.sess = empty
	out.Reset()
	if err := Run(context.Background(), w.options(t), strings.NewReader("\x04"), &out, tea.WithWindowSize(80, 24)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Resume this session") {
		t.Errorf("leaving an empty session printed a resume hint:\n%q", out.String())
	}
}

// TestParallelToolCallsTimedEach: calls of one model answer that run at
// once (both start, then both end) each show their own time and line
// (the second showed 2562047h47m: the TUI tracked one running call).
func TestParallelToolCallsTimedEach(t *testing.T) {
	w := newWorld(t)
	m := New(context.Background(), w.options(t))
	t.Cleanup(m.close)
	m.width, m.height = 100, 24
	m.onEvent(session.Event{Kind: session.TurnStart, TurnID: "t"})
	for _, id := range []string{"a", "b"} {
		m.onEvent(session.Event{Kind: session.ToolStart, TurnID: "t", CallID: id, Tool: "read_file", Args: `{"path":"` + id + `.txt"}`})
	}
	if v := ansi.Strip(m.liveView(10)); !strings.Contains(v, "a.txt") || !strings.Contains(v, "b.txt") {
		t.Errorf("the live region does not show both running calls:\n%s", v)
	}
	for _, id := range []string{"a", "b"} {
		m.onEvent(session.Event{Kind: session.ToolEnd, TurnID: "t", CallID: id, Tool: "read_file", Args: `{"path":"` + id + `.txt"}`, Text: "x"})
	}
	got := ansi.Strip(strings.Join(m.outbox, "\n"))
	if strings.Count(got, "read_file") != 2 || regexp.MustCompile(`\d{3,}h`).MatchString(got) {
		t.Errorf("outcome lines:\n%s", got)
	}
	if v := ansi.Strip(m.liveView(10)); strings.Contains(v, "a.txt") || strings.Contains(v, "b.txt") {
		t.Errorf("ended calls still shown as running:\n%s", v)
	}
}
