package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// foldedLines is how many output lines a finished tool call shows
// without /verbose; the rest is folded into a count.
const foldedLines = 3

// verboseLines bounds the output lines shown with /verbose.
const verboseLines = 200

// argsPreview is the one-line preview of a tool call's arguments: the
// command, path, query or pattern when there is one, else the JSON.
func argsPreview(args string) string {
	var fields map[string]any
	if json.Unmarshal([]byte(args), &fields) == nil {
		for _, k := range []string{"command", "path", "query", "pattern", "name", "action", "url"} {
			if v, ok := fields[k].(string); ok && v != "" {
				return v
			}
		}
	}
	return args
}

// toolResult is what a finished call reports: its output, exit code
// (-1 = none) and error.
type toolResult struct {
	output string
	exit   int
	errMsg string
}

// parseToolResult reads a tool's result: the terminal's JSON (output,
// exit_code, error) or plain text.
func parseToolResult(text string) toolResult {
	var j struct {
		Output   *string `json:"output"`
		Content  *string `json:"content"`
		ExitCode *int    `json:"exit_code"`
		Error    string  `json:"error"`
	}
	r := toolResult{output: text, exit: -1}
	if json.Unmarshal([]byte(text), &j) != nil {
		return r
	}
	switch {
	case j.Output != nil:
		r.output = *j.Output
	case j.Content != nil:
		r.output = *j.Content
	}
	if j.ExitCode != nil {
		r.exit = *j.ExitCode
	}
	r.errMsg = j.Error
	return r
}

// toolOutcome renders a finished tool call: a head line with the name,
// the preview and the outcome (exit code, lines, time), then its output
// folded to foldedLines (verboseLines with /verbose).
func (m *Model) toolOutcome(ev session.Event, took time.Duration) string {
	r := parseToolResult(ev.Text)
	out := strings.TrimRight(r.output, "\n")
	n := 0
	if out != "" {
		n = strings.Count(out, "\n") + 1
	}
	failed := ev.IsError || r.exit > 0 || r.errMsg != ""
	mark := m.styles.ok.Render("✓")
	if failed {
		mark = m.styles.err.Render("✗")
	}
	var facts []string
	if r.exit >= 0 {
		facts = append(facts, fmt.Sprintf("exit %d", r.exit))
	}
	facts = append(facts, plural(n, "line"), took.Round(10*time.Millisecond).String())
	name := m.styles.tool.Render(ev.Tool)
	budget := max(m.width-len(ev.Tool)-lenFacts(facts)-8, 12)
	head := fmt.Sprintf("%s %s %s %s", mark, name, preview(argsPreview(ev.Args), budget),
		m.styles.dim.Render("· "+strings.Join(facts, " · ")))
	body := out
	if ev.IsError && r.errMsg == "" {
		body = strings.TrimPrefix(out, ev.Tool+": ")
	} else if r.errMsg != "" {
		body = strings.TrimSpace(out + "\n" + r.errMsg)
	}
	keep := foldedLines
	if m.verbose {
		keep = verboseLines
	}
	if body == "" {
		return head
	}
	lines := strings.Split(body, "\n")
	shown := lines[:min(keep, len(lines))]
	var b strings.Builder
	b.WriteString(head)
	for _, l := range shown {
		b.WriteString("\n" + m.styles.dim.Render("  │ "+outputLine(l, m.width-6)))
	}
	if rest := len(lines) - len(shown); rest > 0 {
		b.WriteString("\n" + m.styles.dim.Render(fmt.Sprintf("  └ … %s folded (/verbose shows more)", plural(rest, "more line"))))
	}
	return b.String()
}

// outputLine is one line of a tool's output as shown under its call:
// control sequences and characters removed (termsafe), tabs expanded to
// 8-column stops, runs of spaces kept (columns of `ls -la` stay aligned),
// cut to n columns.
func outputLine(l string, n int) string {
	var b strings.Builder
	col := 0
	for _, r := range termsafe.Clean(l) {
		if r == '\t' {
			pad := 8 - col%8
			b.WriteString(strings.Repeat(" ", pad))
			col += pad
			continue
		}
		b.WriteRune(r)
		col++
	}
	return ansi.Truncate(strings.TrimRight(b.String(), " "), max(n, 8), "…")
}

func lenFacts(f []string) int { return len(strings.Join(f, " · ")) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// runningToolLine is the live line of the tool call that runs.
func (m *Model) runningToolLine(t *runningTool) string {
	el := m.now().Sub(t.started).Round(100 * time.Millisecond)
	budget := max(m.width-len(t.name)-16, 12)
	return fmt.Sprintf("%s %s %s %s", m.styles.warn.Render("⚙"), m.styles.tool.Render(t.name),
		preview(argsPreview(t.args), budget), m.styles.dim.Render("· "+el.String()))
}
