package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// renderer prints agent progress for a person. In quiet mode (-Q, -z) only
// notices reach stderr and the caller prints the final answer; otherwise the
// answer streams to stdout and tool calls are shown on stderr as they run.
type renderer struct {
	out, diag io.Writer
	quiet     bool
	verbose   bool
	// safe, when set (stdout is a terminal), neutralises control
	// sequences in the model's text; nil writes the text as is.
	safe *termsafe.Stream

	mu       sync.Mutex
	streamed bool // some answer text was streamed in this model call
	midLine  bool // the last byte written to out was not a newline
}

func (r *renderer) event(ev session.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case session.ReasoningDelta:
		if r.verbose {
			fmt.Fprint(r.diag, ev.Text)
		}
	case session.TextDelta:
		if r.quiet {
			return
		}
		text := ev.Text
		if r.safe != nil {
			text = r.safe.Clean(text)
		}
		r.writeStreamed(text)
		r.streamed = true
	case session.ToolStart:
		if r.quiet && !r.verbose {
			return
		}
		if r.safe != nil && !r.quiet {
			r.writeStreamed(r.safe.Flush())
		}
		r.endLine()
		fmt.Fprintf(r.diag, "  ⚙ %s %s\n", termsafe.Clean(ev.Tool), preview(ev.Args, 120))
	case session.ToolEnd:
		switch {
		case r.quiet && !r.verbose:
		case ev.IsError:
			// Tool errors often start with the tool's name already.
			msg := strings.TrimPrefix(ev.Text, ev.Tool+": ")
			fmt.Fprintf(r.diag, "  ✗ %s: %s\n", termsafe.Clean(ev.Tool), preview(msg, 200))
		case r.verbose:
			fmt.Fprintf(r.diag, "  ✓ %s: %s\n", termsafe.Clean(ev.Tool), preview(ev.Text, 200))
		}
	case session.Retry:
		if r.quiet {
			return
		}
		r.endLine()
		fmt.Fprintf(r.diag, "hermes: %s\n", termsafe.Clean(ev.Text))
	case session.Notice:
		r.endLine()
		fmt.Fprintf(r.diag, "hermes: %s\n", termsafe.Clean(ev.Text))
	}
}

// writeStreamed writes a piece of the streamed answer to out.
func (r *renderer) writeStreamed(text string) {
	if text == "" {
		return
	}
	fmt.Fprint(r.out, text)
	r.midLine = !strings.HasSuffix(text, "\n")
}

// endLine terminates a streamed line before other output.
func (r *renderer) endLine() {
	if r.midLine {
		fmt.Fprintln(r.out)
		r.midLine = false
	}
}

// finish ends the streamed answer, or prints text if nothing was streamed.
func (r *renderer) finish(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.quiet || !r.streamed {
		if r.safe != nil {
			text = termsafe.Clean(text)
		}
		if text != "" {
			fmt.Fprintln(r.out, strings.TrimRight(text, "\n"))
		}
	} else {
		if r.safe != nil {
			r.writeStreamed(r.safe.Flush())
		}
		r.endLine()
	}
	r.streamed = false
	if r.safe != nil {
		*r.safe = termsafe.Stream{}
	}
}

// preview returns s on one line, cut to n runes, without control
// sequences (tool names, arguments and output come from the model and
// from files).
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(termsafe.Clean(s)), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
