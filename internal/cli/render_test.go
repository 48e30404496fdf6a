package cli

import (
	"bytes"
	"testing"

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
