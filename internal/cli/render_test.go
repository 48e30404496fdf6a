package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/session"
)

// Regression (issue 8): a failed terminal call was shown as
// "✗ terminal: terminal: command not run: …".
func TestToolErrorShownWithoutDoubledName(t *testing.T) {
	var diag bytes.Buffer
	r := &renderer{out: &bytes.Buffer{}, diag: &diag}
	r.event(session.Event{Kind: session.ToolEnd, Tool: "terminal", Text: "terminal: command not run: denied", IsError: true})
	if got := diag.String(); got != "  ✗ terminal: command not run: denied\n" {
		t.Fatalf("shown %q", got)
	}
}

// A retry line reaches stderr, except in quiet mode (-Q).
func TestRetryShownUnlessQuiet(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		var diag bytes.Buffer
		r := &renderer{out: &bytes.Buffer{}, diag: &diag, quiet: quiet}
		r.event(session.Event{Kind: session.Retry, Text: "HTTP 503; retrying in 1s (attempt 1)"})
		want := "hermes: HTTP 503; retrying in 1s (attempt 1)\n"
		if quiet {
			want = ""
		}
		if got := diag.String(); got != want {
			t.Fatalf("quiet=%v: shown %q, want %q", quiet, got, want)
		}
	}
}

// Control sequences in a tool call's name, arguments or output (written
// by the model or read from a file) do not reach the terminal.
func TestToolLinesWithoutControlSequences(t *testing.T) {
	var diag bytes.Buffer
	r := &renderer{out: &bytes.Buffer{}, diag: &diag, verbose: true}
	r.event(session.Event{Kind: session.ToolStart, Tool: "read\x1b]0;evil\x07_file", Args: "{\"path\":\"a\x1b[2J\"}"})
	r.event(session.Event{Kind: session.ToolEnd, Tool: "read_file", Text: "x\x1b]52;c;QUJD\x07y\rEVIL"})
	if got := diag.String(); strings.ContainsAny(got, "\x1b\r\a") || !strings.Contains(got, "xyEVIL") {
		t.Fatalf("shown %q", got)
	}
}

// The approval prompt shows the command's carriage return and line erase
// as escapes, so they cannot hide the dangerous part.
func TestApprovalQuestionShowsControls(t *testing.T) {
	q := approvalQuestion(&approval.Prompt{Danger: "recursive delete", Command: "rm -rf ~ #\x1b[2K\rls -la"})
	if !strings.Contains(q, `rm -rf ~ #\x1b[2K\rls -la`) || strings.ContainsAny(q, "\x1b\r") {
		t.Fatalf("asked %q", q)
	}
}

// A tool's error or output shown on stderr cannot drive the terminal: an
// MCP server's error text with an OSC 52 clipboard write or a screen
// clear reached it as is.
func TestToolTextEscapesNeutralised(t *testing.T) {
	var diag bytes.Buffer
	r := &renderer{out: &bytes.Buffer{}, diag: &diag, verbose: true}
	r.event(session.Event{Kind: session.ToolStart, Tool: "mcp__evil__x", Args: "{\"a\":\"\x1b[2J\"}"})
	r.event(session.Event{Kind: session.ToolEnd, Tool: "mcp__evil__x", Text: "boom\x1b]52;c;aGVsbG8=\x07 \x1b[2Jgone", IsError: true})
	r.event(session.Event{Kind: session.ToolEnd, Tool: "mcp__evil__x", Text: "ok\x1b]0;title\x07\r done"})
	got := diag.String()
	for _, c := range []string{"\x1b", "\x07", "\r"} {
		if strings.Contains(got, c) {
			t.Errorf("stderr holds %q: %q", c, got)
		}
	}
	if !strings.Contains(got, "boom gone") || !strings.Contains(got, "ok done") {
		t.Errorf("the text itself is lost: %q", got)
	}
}
