package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// liveTurn is the running turn's not yet printed output: the answer text
// since the last flushed paragraph, the reasoning being streamed and the
// tool call running.
type liveTurn struct {
	id      string
	started time.Time
	// text is the streamed answer not yet printed: at most the paragraph
	// (or code block) being written.
	text string
	// fence is set while text is inside a fenced code block that was
	// opened in an already printed part.
	fence                string
	thinking             strings.Builder
	thinkAt              time.Time
	tools                []*runningTool // in start order; parallel calls run at once
	rendered             string         // cached markdown of text at renderedW
	renderedW, renderedN int
	renderedAt           time.Time // wall clock of the cached rendering
	redrawSoon           bool      // a redrawMsg is scheduled
	// textSafe and thinkSafe remove control sequences from the streamed
	// answer and reasoning (a sequence may span two deltas).
	textSafe, thinkSafe termsafe.Stream
	// printed is set when a block of the answer was printed since the
	// turn or its last tool call began: the next one is set apart from it
	// by a blank line, as the markdown renderer sets blocks apart.
	printed bool
}

// runningTool is a tool call between its ToolStart and ToolEnd.
type runningTool struct {
	callID, name, args string
	started            time.Time
}

// approvalPrompt is an approval request waiting for the person.
type approvalPrompt struct {
	id   string
	p    approval.Prompt
	done <-chan struct{}
	// printed is set when the whole command was printed above (it is
	// taller than the approval box can show).
	printed bool
}

// approvalDoneMsg says the approval id was answered elsewhere or timed out.
type approvalDoneMsg struct{ id string }

// redrawMsg redraws the live paragraph after streamRenderEvery.
type redrawMsg struct{}

// reviewMsg carries the self-review's changes.
type reviewMsg struct{ lines []string }

// send sends text to the session and starts showing its turn.
func (m *Model) send(text string) tea.Cmd {
	m.lastUser = text
	if _, _, err := m.sess.Send(m.ctx, text, session.SendOptions{}); err != nil {
		return m.printError(err)
	}
	return m.print(m.styles.user.Render("› ") + firstLines(text, 6))
}

// cleanEvent removes terminal control sequences from what the model or a
// tool wrote in ev (the streamed deltas are cleaned by the turn's
// streams). An approval is shown with approval.Printable: its command's
// control characters as escapes, so the person approves what will run.
func cleanEvent(ev session.Event) session.Event {
	ev.Tool, ev.Args = termsafe.Clean(ev.Tool), termsafe.Clean(ev.Args)
	if ev.Kind != session.TextDelta && ev.Kind != session.ReasoningDelta {
		ev.Text = termsafe.Clean(ev.Text)
	}
	return ev
}

// onEvent applies one session event.
func (m *Model) onEvent(ev session.Event) tea.Cmd {
	ev = cleanEvent(ev)
	switch ev.Kind {
	case session.TurnStart:
		m.turn = &liveTurn{id: ev.TurnID, started: m.now()}
		return nil
	case session.Queued:
		return m.printLines(m.styles.dim.Render(fmt.Sprintf("(queued: %d ahead)", ev.Position)))
	case session.ApprovalRequest:
		m.approval = &approvalPrompt{id: ev.Approval.ID, p: *ev.Approval, done: ev.ApprovalDone}
		done, id := ev.ApprovalDone, ev.Approval.ID
		wait := func() tea.Msg { <-done; return approvalDoneMsg{id: id} }
		what := m.approval.p.What()
		if strings.Count(wrap(what, max(m.width-4, 20)), "\n")+1 > m.height/2 {
			// Too tall for the approval box: the whole command goes to
			// the scrollback, where the person can read all of it.
			m.approval.printed = true
			return tea.Batch(m.printLines(m.styles.warn.Render("command to approve:"), what), wait)
		}
		return wait
	case session.ClarifyRequest:
		return m.onQuestion(ev)
	case session.Notice, session.Retry:
		return m.printLines(m.styles.warn.Render("hermes: ") + ev.Text)
	case session.Final:
		return m.endTurn(ev, nil)
	case session.Error:
		return m.endTurn(ev, ev.Err)
	}
	t := m.turn
	if t == nil || ev.TurnID != t.id {
		return nil
	}
	switch ev.Kind {
	case session.ReasoningDelta:
		if t.thinking.Len() == 0 {
			t.thinkAt = m.now()
		}
		t.thinking.WriteString(t.thinkSafe.Clean(ev.Text))
	case session.TextDelta:
		out := m.flushThinking()
		t.text += t.textSafe.Clean(ev.Text)
		var redraw tea.Cmd
		if !t.redrawSoon {
			// The live paragraph is re-rendered at most every
			// streamRenderEvery; this redraw shows the last delta.
			t.redrawSoon = true
			redraw = tea.Tick(streamRenderEvery, func(time.Time) tea.Msg { return redrawMsg{} })
		}
		return tea.Batch(tea.Sequence(out, m.flushParagraphs(false)), redraw)
	case session.ToolStart:
		t.text += t.textSafe.Flush()
		out := tea.Sequence(m.flushThinking(), m.flushParagraphs(true))
		t.printed = false
		t.tools = append(t.tools, &runningTool{callID: ev.CallID, name: ev.Tool, args: ev.Args, started: m.now()})
		return out
	case session.ToolEnd:
		started := m.now() // a call that never started (cancelled first) took no time
		t.tools = slices.DeleteFunc(t.tools, func(r *runningTool) bool {
			if r.callID == ev.CallID {
				started = r.started
				return true
			}
			return false
		})
		return m.printLines(m.toolOutcome(ev, m.now().Sub(started)))
	}
	return nil
}

// endTurn prints what is left of the turn, its error and usage.
func (m *Model) endTurn(ev session.Event, err error) tea.Cmd {
	var cmds []tea.Cmd
	if m.turn != nil && (ev.TurnID == m.turn.id || ev.TurnID == "") {
		m.turn.text += m.turn.textSafe.Flush()
		cmds = append(cmds, m.flushThinking(), m.flushParagraphs(true))
		m.turn = nil
	}
	m.approval = nil
	if strings.HasPrefix(m.hint, "interrupting") {
		m.hint = "" // the turn is over, interrupted or not
	}
	res := ev.Result
	m.usage.input += res.Usage.InputTokens
	m.usage.output += res.Usage.OutputTokens
	m.usage.cached += res.Usage.CacheReadTokens
	m.usage.calls += res.APICalls
	switch {
	case err != nil && (ev.Cancelled || errors.Is(err, agent.ErrCancelled)):
		cmds = append(cmds, m.printLines(m.styles.warn.Render("interrupted")))
	case err != nil:
		cmds = append(cmds, m.printError(err))
	case res.Stopped == "repeated_failure":
		cmds = append(cmds, m.printLines(m.styles.warn.Render("stopped: the same tool call kept failing")))
	case res.Stopped == "max_turns":
		cmds = append(cmds, m.printLines(m.styles.warn.Render("stopped: the turn budget (agent.max_turns) ran out")))
	}
	m.updateContextUsed()
	if err == nil && m.opts.Review != nil {
		s, ctx := m.sess, m.ctx
		cmds = append(cmds, func() tea.Msg { return reviewMsg{lines: m.opts.Review(ctx, s, res)} })
	}
	return tea.Sequence(cmds...)
}

// updateContextUsed estimates the tokens the next model call starts with.
func (m *Model) updateContextUsed() {
	if m.sess.Busy() {
		return
	}
	st := m.sess.State()
	m.ctxUsed = agent.EstimateTokens(st.System, st.History)
}

// flushThinking prints the collapsed reasoning (or all of it with
// /verbose) once the model moves on to answering or calling a tool.
func (m *Model) flushThinking() tea.Cmd {
	t := m.turn
	if t == nil || t.thinking.Len() == 0 {
		return nil
	}
	text := strings.TrimSpace(t.thinking.String())
	t.thinking.Reset()
	m.lastThink = text
	if text == "" {
		return nil
	}
	took := m.now().Sub(t.thinkAt).Round(100 * time.Millisecond)
	if m.verbose {
		return m.printLines(m.styles.dim.Render("▾ reasoning ("+took.String()+")"), m.styles.dim.Render(wrap(text, m.width-2)))
	}
	n := strings.Count(text, "\n") + 1
	return m.printLines(m.styles.dim.Render(fmt.Sprintf("▸ reasoning · %s · %s (Ctrl-O shows it)", took, plural(n, "line"))))
}

// expandReasoning prints the last turn's reasoning (Ctrl-O).
func (m *Model) expandReasoning() tea.Cmd {
	if m.lastThink == "" {
		return nil
	}
	return m.printLines(m.styles.dim.Render("▾ reasoning"), m.styles.dim.Render(wrap(m.lastThink, m.width-2)))
}

// flushParagraphs prints the finished paragraphs of the streamed answer
// as markdown, keeping the one being written (all of it when final).
func (m *Model) flushParagraphs(final bool) tea.Cmd {
	t := m.turn
	if t == nil || t.text == "" {
		return nil
	}
	cut := len(t.text)
	if !final {
		cut = paragraphCut(t.fence, t.text)
		if cut == 0 {
			return nil
		}
	}
	done := t.text[:cut]
	t.text = t.text[cut:]
	md := t.fence + done
	t.fence = openFence(md)
	if t.fence != "" && !final {
		md += "\n" + closingFence(t.fence) + "\n" // close it for rendering
	}
	t.rendered, t.renderedN = "", 0
	out := strings.TrimRight(m.markdown(md), "\n")
	if strings.TrimSpace(out) == "" {
		return nil
	}
	if t.printed {
		out = "\n" + out
	}
	t.printed = true
	return m.print(out)
}

// paragraphCut is the end of the last blank line outside a code block in
// text (0 = none), given the fence line open at its start ("" = none).
func paragraphCut(fenceLine, text string) int {
	cut, pos := 0, 0
	open := fenceOf(fenceLine)
	for pos < len(text) {
		nl := strings.IndexByte(text[pos:], '\n')
		if nl < 0 {
			break
		}
		line := text[pos : pos+nl]
		pos += nl + 1
		switch {
		case open.n > 0:
			if open.closes(line) {
				open = fence{}
				cut = pos // the end of a code block is a paragraph end
			}
		case fenceOf(line).n > 0:
			open = fenceOf(line)
		case strings.TrimSpace(line) == "":
			cut = pos
		}
	}
	return cut
}

// openFence returns the fence line ("```go\n") left open at the end of
// md, or "".
func openFence(md string) string {
	open, line := fence{}, ""
	for _, l := range strings.Split(md, "\n") {
		if open.n > 0 {
			if open.closes(l) {
				open, line = fence{}, ""
			}
		} else if f := fenceOf(l); f.n > 0 {
			open, line = f, strings.TrimSpace(l)+"\n"
		}
	}
	return line
}

// closingFence is the line that closes the block opened by fenceLine
// ("```go\n" → "```"): its backticks or tildes without the info string,
// which a closing fence must not have.
func closingFence(fenceLine string) string {
	f := fenceOf(fenceLine)
	return strings.Repeat(string(f.ch), f.n)
}

// onApprovalKey answers the pending approval with o/s/a/d (Esc denies).
func (m *Model) onApprovalKey(key string) tea.Cmd {
	var a approval.Answer
	switch key {
	case "o", "y":
		a = approval.Once
	case "s":
		a = approval.Session
	case "a":
		a = approval.Always
	case "d", "n", "esc":
		a = approval.Deny
	default:
		return nil
	}
	p := m.approval
	m.approval = nil
	m.sess.Approve(p.id, a)
	return m.printLines(m.styles.dim.Render(fmt.Sprintf("approval: %s — %s", a, firstLines(p.p.What(), 1))))
}

// printLines prints lines to the scrollback.
func (m *Model) printLines(lines ...string) tea.Cmd {
	if len(lines) == 0 {
		return nil
	}
	return m.print(strings.Join(lines, "\n"))
}

// printError prints err for the person.
func (m *Model) printError(err error) tea.Cmd {
	return m.printLines(m.styles.err.Render("hermes: ") + termsafe.Clean(err.Error()))
}

// firstLines returns the first n lines of s, marking what was left out.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(termsafe.Clean(s), "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-n)
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// recapExchanges bounds the recap of a resumed session (user messages):
// the last 10, as Hermes' resume panel shows (Hermes "sessions" docs).
const recapExchanges = 10

// recapLines bounds the rendered lines shown of each recalled message.
const recapLines = 3

// recap summarises the last exchanges of a resumed session: each message
// rendered as markdown, folded to its first recapLines lines.
func (m *Model) recap() string {
	if m.sess.Busy() {
		return ""
	}
	h := m.sess.History()
	var parts []string
	users := 0
	for i := len(h) - 1; i >= 0 && users < recapExchanges; i-- {
		msg := h[i]
		text := strings.TrimSpace(msg.Content)
		switch {
		case msg.Role == "user" && text != "":
			users++
			parts = append(parts, m.recalled(m.styles.user.Render("› "), text))
		case msg.Role == "assistant" && text != "":
			parts = append(parts, m.recalled("  ", text))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	head := m.styles.dim.Render(fmt.Sprintf("── resumed %s · last %s ──", m.sess.ID(), plural(users, "exchange")))
	return head + "\n" + strings.Join(parts, "\n")
}

// recalled is one message of the recap: text (stored, so its control
// sequences are removed: termsafe) rendered as markdown two columns in, its blank
// lines dropped, folded to recapLines lines; the first line starts with
// mark.
func (m *Model) recalled(mark, text string) string {
	if m.md == nil {
		m.md = newMarkdown()
	}
	var lines []string
	for _, l := range strings.Split(m.md.render(termsafe.Clean(text), max(m.width-4, 20)), "\n") {
		if strings.TrimSpace(ansi.Strip(l)) != "" {
			lines = append(lines, l)
		}
	}
	shown := lines[:min(len(lines), recapLines)]
	for i := range shown {
		if i == 0 {
			shown[i] = mark + shown[i]
		} else {
			shown[i] = "  " + shown[i]
		}
	}
	if rest := len(lines) - len(shown); rest > 0 {
		shown = append(shown, m.styles.dim.Render(fmt.Sprintf("  … %s", plural(rest, "more line"))))
	}
	return strings.Join(shown, "\n")
}

// preview returns s on one line, cut to n runes, without control
// sequences.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(termsafe.Clean(s)), " ")
	if n < 8 {
		n = 8
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// withTimeout runs fn under a bounded context derived from ctx.
func withTimeout(ctx context.Context, d time.Duration, fn func(context.Context) error) error {
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return fn(c)
}
