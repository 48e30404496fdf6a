// Package termsafe neutralises terminal control sequences in text that
// hermes did not write itself (the model's answer, tool names, tool
// output, file and session names) before it reaches a terminal.
package termsafe

import (
	"strings"
)

// Stream neutralises terminal control sequences in model text written to
// a terminal: escape sequences (CSI such as cursor movement and colours,
// OSC such as an OSC 52 clipboard write or a window title, DCS/APC/PM/SOS
// strings, two-byte escapes) are removed, and so are other C0 and C1
// control characters except newline and tab, so the model cannot move the
// cursor, rewrite earlier output or reach the clipboard. Plain text and
// newlines are kept. It keeps state across calls, because a sequence can be
// split between two streamed deltas. The zero value is ready to use.
// Text going to a pipe or file is not filtered (see README "Output").
// Stream is for one stream of deltas; Clean cleans a whole string.
//
// SGR colour sequences whose ESC byte was lost on the way ("[32mok[0m":
// a bracket, numeric parameters of one to three digits separated by ';',
// and "m", as tool output shows them after a program or a model dropped
// the ESC) are removed too, like tool output's (see internal/tool). A
// bracket that may start one is held back until the sequence completes
// or cannot; Flush returns what is held at the end of a stream.
type Stream struct {
	state   int
	pending []byte // a possible ESC-less SGR sequence: "[", digits, ';'
}

// maxBareSGR is the longest ESC-less SGR sequence held back: "[" and
// up to four parameters of three digits.
const maxBareSGR = 1 + 4*4

const (
	tsText   = iota
	tsEsc    // after ESC
	tsCSI    // inside ESC [ … final byte
	tsString // inside OSC/DCS/APC/PM/SOS, until BEL or ST
	tsStrEsc // ESC inside a string: ST if followed by '\'
)

// Clean returns s with control sequences removed.
func (f *Stream) Clean(s string) string {
	if f.state == tsText && len(f.pending) == 0 && !needsFilter(s) && !strings.Contains(s, "[") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if f.state == tsText && f.bareSGR(&b, r) {
			continue
		}
		switch f.state {
		case tsEsc:
			switch {
			case r == '[':
				f.state = tsCSI
			case r == ']' || r == 'P' || r == '_' || r == '^' || r == 'X':
				f.state = tsString
			case r >= 0x20 && r <= 0x2f:
				// intermediate byte of a two-byte escape: keep waiting
			default:
				f.state = tsText
			}
			continue
		case tsCSI:
			if r >= 0x40 && r <= 0x7e {
				f.state = tsText
			} else if r == '\n' {
				f.state = tsText
				b.WriteRune(r)
			}
			continue
		case tsString:
			switch r {
			case 0x07, 0x9c:
				f.state = tsText
			case 0x1b:
				f.state = tsStrEsc
			case '\n':
				// An unterminated string ends at the line end.
				f.state = tsText
				b.WriteRune(r)
			}
			continue
		case tsStrEsc:
			f.state = tsString
			if r == '\\' {
				f.state = tsText
			}
			continue
		}
		switch {
		case r == 0x1b:
			f.state = tsEsc
		case r == 0x9b:
			f.state = tsCSI
		case r == 0x9d || r == 0x90 || r == 0x9f || r == 0x9e || r == 0x98:
			f.state = tsString
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// other control characters are dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bareSGR feeds r to the ESC-less SGR matcher and reports whether r was
// consumed (held back or dropped with a complete sequence). When r ends
// a held prefix that is no sequence, the prefix is written to b and r is
// left to the caller.
func (f *Stream) bareSGR(b *strings.Builder, r rune) bool {
	if len(f.pending) == 0 {
		if r != '[' {
			return false
		}
		f.pending = append(f.pending, '[')
		return true
	}
	digits := 0 // digits at the end of pending
	for i := len(f.pending) - 1; i > 0 && f.pending[i] >= '0' && f.pending[i] <= '9'; i-- {
		digits++
	}
	switch {
	case r == 'm' && digits > 0:
		f.pending = f.pending[:0] // a whole sequence: dropped
		return true
	case r >= '0' && r <= '9' && digits < 3 && len(f.pending) < maxBareSGR:
		f.pending = append(f.pending, byte(r))
		return true
	case r == ';' && digits > 0 && len(f.pending) < maxBareSGR:
		f.pending = append(f.pending, ';')
		return true
	}
	b.Write(f.pending)
	f.pending = f.pending[:0]
	return f.bareSGR(b, r) // a new '[' may start another sequence
}

// Flush returns the text held back at the end of a stream (a bracket
// that could have started an ESC-less SGR sequence) and resets f.
func (f *Stream) Flush() string {
	out := string(f.pending)
	*f = Stream{}
	return out
}

// Clean returns s with its control sequences and characters removed
// (newlines and tabs are kept); an unterminated sequence runs to the
// line end.
func Clean(s string) string {
	var f Stream
	return f.Clean(s) + f.Flush()
}

// needsFilter reports whether s holds any byte Clean would act on.
func needsFilter(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c == 0xc2 {
			return true
		}
	}
	return false
}
