package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// styles are the TUI's colours.
type styles struct {
	dim, user, tool, ok, warn, err, bar, approval lipgloss.Style
	low, mid, high                                lipgloss.Style
}

func newStyles() styles {
	return styles{
		dim:      lipgloss.NewStyle().Faint(true),
		user:     lipgloss.NewStyle().Foreground(lipgloss.Color("6")).Bold(true),
		tool:     lipgloss.NewStyle().Foreground(lipgloss.Color("5")).Bold(true),
		ok:       lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		warn:     lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		err:      lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		bar:      lipgloss.NewStyle().Reverse(true),
		approval: lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("3")).Padding(0, 1),
		low:      lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		mid:      lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		high:     lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
	}
}

// markdown renders md for the terminal's width (markdown.go; code blocks
// highlighted by highlight.go).
func (m *Model) markdown(md string) string {
	if m.md == nil {
		m.md = newMarkdown()
	}
	return m.md.render(md, max(m.width-2, 20))
}

// wrap wraps s at width w (ANSI aware).
func wrap(s string, w int) string { return ansi.Wrap(s, max(w, 10), " ") }

// banner is the first lines printed, wrapped between words at the
// terminal's width (greet prints it once the width is known).
func (m *Model) banner() string {
	model := m.rt.Model()
	if model == "" {
		model = "(model from the recording)"
	}
	w := m.width - 1
	head := fmt.Sprintf("%s %s · %s via %s · session %s",
		m.styles.user.Render("Hermes Agent"), "v"+strings.TrimPrefix(m.opts.Version, "v"), model, m.rt.ProviderName(), m.sess.ID())
	keys := "Enter sends · Alt-Enter/Ctrl-J newline · /help · Ctrl-C interrupts · Ctrl-D quits"
	return wrap(head, w) + "\n" + m.styles.dim.Render(wrap(keys, w))
}

// View draws the live region: the running turn, the approval, the
// completion menu or picker, the editor and the status bar, in at most
// liveMax rows. The running turn gets the rows the others leave.
func (m *Model) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	var bottom []string
	if m.picker != nil {
		bottom = append(bottom, m.picker.view(m))
	} else if m.complete.active() {
		bottom = append(bottom, m.complete.view(m))
	}
	if m.hint != "" {
		bottom = append(bottom, m.styles.warn.Render(m.hint))
	}
	bottom = append(bottom, m.editorView(), m.statusBar())
	if m.approval != nil {
		// The approval gets the rows the editor and status bar leave of
		// liveMax, so its danger line and answers are never cut off.
		rows := m.liveMax() - lipgloss.Height(lipgloss.JoinVertical(lipgloss.Left, bottom...))
		bottom = append([]string{m.approvalView(rows)}, bottom...)
	}
	fixed := lipgloss.JoinVertical(lipgloss.Left, bottom...)
	room := m.liveMax() - lipgloss.Height(fixed)
	live := m.liveView(room)
	content := fixed
	if live != "" {
		content = live + "\n" + fixed
	}
	// Never taller than liveMax, whatever a tiny terminal leaves for the
	// approval or the picker: prints fit above it (printer.go).
	content = lastLines(content, m.liveMax())
	v := tea.NewView(content)
	v.WindowTitle = "hermes · " + termsafe.Clean(m.rt.Model())
	return v
}

// liveView is the running turn in at most rows lines (its last ones).
func (m *Model) liveView(rows int) string {
	t := m.turn
	if t == nil || rows <= 0 {
		return ""
	}
	var parts []string
	if t.thinking.Len() > 0 {
		th := strings.TrimSpace(t.thinking.String())
		parts = append(parts, m.styles.dim.Render(lastLines("thinking… "+wrap(th, m.width-2), 3)))
	}
	if t.text != "" {
		parts = append(parts, m.streamView(rows))
	}
	for _, r := range t.tools {
		parts = append(parts, m.runningToolLine(r))
	}
	if len(parts) == 0 {
		el := m.now().Sub(t.started).Round(time.Second)
		parts = append(parts, m.styles.dim.Render("working… "+el.String()))
	}
	return lastLines(strings.Join(parts, "\n"), rows)
}

// streamLimit is the streamed text beyond which the live region shows it
// wrapped rather than rendered as markdown (a very long paragraph or
// code block: it is rendered once, when it ends).
const streamLimit = 16 << 10

// streamRenderEvery bounds how often the paragraph being streamed is
// rendered as markdown again (each delta would otherwise cost a markdown
// rendering ahead of any keystroke in the queue).
const streamRenderEvery = 50 * time.Millisecond

// streamView is the paragraph being streamed, rendered as markdown; the
// rendering is cached while the text and width are unchanged.
func (m *Model) streamView(rows int) string {
	t := m.turn
	fresh := t.renderedN == len(t.text) || time.Since(t.renderedAt) < streamRenderEvery
	if t.rendered != "" && t.renderedW == m.width && fresh {
		return t.rendered
	}
	var out string
	if len(t.text) > streamLimit {
		tail := t.text[len(t.text)-streamLimit:]
		out = lastLines(wrap(tail, m.width-2), rows)
	} else {
		md := t.fence + t.text
		if f := openFence(md); f != "" {
			md += "\n" + closingFence(f) + "\n"
		}
		out = m.markdown(md)
	}
	t.rendered, t.renderedN, t.renderedW, t.renderedAt = out, len(t.text), m.width, time.Now()
	return out
}

// approvalView is the pending approval in at most rows lines: what it
// would do, the command and the answers. A command taller than the room
// left shows its first and last lines around a count of the others (the
// whole command was printed above when it came: approvalPrinted).
func (m *Model) approvalView(rows int) string {
	p := m.approval.p
	w := max(m.width-4, 20)
	head := []string{m.styles.warn.Render(firstLines(wrap("⚠ "+approval.Printable(p.Danger), w), 2))}
	if p.Reason != "" {
		head = append(head, m.styles.dim.Render(firstLines(wrap("reason: "+approval.Printable(p.Reason), w), 2)))
	}
	answers := "approve? " + m.styles.user.Render("[o]") + "nce " + m.styles.user.Render("[s]") + "ession " +
		m.styles.user.Render("[a]") + "lways " + m.styles.err.Render("[d]") + "eny"
	lines := strings.Split(wrap(p.What(), w), "\n")
	room := max(rows-2-lipgloss.Height(strings.Join(head, "\n"))-1, 3) // 2 border rows, 1 answer row
	if len(lines) > room {
		first := room / 2
		last := room - 1 - first
		note := fmt.Sprintf("… %d more lines …", len(lines)-first-last)
		if m.approval.printed {
			note = fmt.Sprintf("… %d more lines (the whole command is printed above) …", len(lines)-first-last)
		}
		lines = append(append(lines[:first:first], m.styles.dim.Render(note)), lines[len(lines)-last:]...)
	}
	body := strings.Join(head, "\n") + "\n" + strings.Join(lines, "\n") + "\n" + answers
	return m.styles.approval.Width(m.width).Render(body)
}

// editorView is the input editor.
func (m *Model) editorView() string {
	return m.input.View()
}

// statusBar is one line: model, context fill, tokens, elapsed time,
// YOLO and box state; segments are dropped from the right of the
// priority list when the terminal is narrow.
func (m *Model) statusBar() string {
	window := m.rt.ContextWindow()
	pct := 0
	if window > 0 {
		pct = min(m.ctxUsed*100/window, 100)
	}
	fill := m.styles.low
	switch {
	case pct >= 85:
		fill = m.styles.high
	case pct >= 60:
		fill = m.styles.mid
	}
	cells := 8
	on := pct * cells / 100
	bar := fill.Render(strings.Repeat("█", on)) + m.styles.dim.Render(strings.Repeat("░", cells-on))
	ctxSeg := fmt.Sprintf("%s %s/%s %s", bar, tokens(m.ctxUsed), tokens(window), fill.Render(fmt.Sprintf("%d%%", pct)))
	type seg struct {
		text     string
		priority int // lower = kept longer
	}
	segs := []seg{{termsafe.Clean(m.rt.Model()), 0}, {ctxSeg, 1}}
	if m.usage.calls > 0 || m.usage.input > 0 {
		segs = append(segs, seg{fmt.Sprintf("↑%s ↓%s", tokens(m.usage.input), tokens(m.usage.output)), 3})
	}
	segs = append(segs, seg{elapsed(m.now().Sub(m.started)), 4})
	if m.yolo {
		segs = append(segs, seg{m.styles.err.Render("⚠ YOLO"), 0})
	}
	if m.opts.BoxState != nil {
		st := m.opts.BoxState()
		style := m.styles.ok
		if st != "ready" {
			style = m.styles.warn
		}
		segs = append(segs, seg{"box " + style.Render(st), 2})
	}
	if m.turn != nil {
		segs = append(segs, seg{m.styles.warn.Render("● working"), 1})
	}
	sep := m.styles.dim.Render(" │ ")
	for limit := 4; limit >= 0; limit-- {
		var kept []string
		for _, s := range segs {
			if s.priority <= limit {
				kept = append(kept, s.text)
			}
		}
		line := strings.Join(kept, sep)
		if ansi.StringWidth(line) <= m.width || limit == 0 {
			return ansi.Truncate(line, m.width, "…")
		}
	}
	return ""
}

// tokens formats a token count: 950, 12.3k, 1.2M.
func tokens(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// elapsed formats a duration as 1:02:03 or 02:03.
func elapsed(d time.Duration) string {
	s := int(d.Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[len(lines)-n:], "\n")
}
