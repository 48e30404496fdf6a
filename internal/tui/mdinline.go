package tui

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/termsafe"
)

// The inline half of the markdown parser: code spans, backslash escapes,
// entities, *emphasis*, **strong**, ~~strikethrough~~ (CommonMark's
// delimiter-run rules, including the rule of 3), inline links and
// images, autolinks, raw HTML tags and hard line breaks.

// inl is an inline node.
type inl struct {
	kind     inlKind
	text     string // text, code, html; link and image: the destination; autolink: the URL
	children []*inl // emphasis, strong, strike, link, image
	// Delimiter runs (*, _, ~) before emphasis is resolved.
	ch          byte
	n, orig     int
	open, close bool
}

type inlKind uint8

const (
	inlText inlKind = iota
	inlCode
	inlEmph
	inlStrong
	inlStrike
	inlLink
	inlImage
	inlAutolink
	inlHTML
	inlBreak
	inlDelim
)

// parseInline parses a paragraph's (or heading's, or cell's) text.
func parseInline(s string) []*inl {
	p := &inlineParser{s: s}
	for i := 0; i < len(s); {
		i = p.step(i)
	}
	p.flush()
	return resolveEmphasis(p.out)
}

// inlineParser is the state of parseInline: the nodes so far and the
// text not yet in a node.
type inlineParser struct {
	s   string
	out []*inl
	buf textBuf
	// closers[i] is the ] matching the [ at i, or -1; computed at the first [.
	closers []int
}

// textBuf is the text not yet in a node. Unlike a strings.Builder it
// drops trailing spaces in place: copying it at each line end made a
// paragraph of many lines quadratic.
type textBuf struct{ b []byte }

func (t *textBuf) WriteByte(c byte) error            { t.b = append(t.b, c); return nil }
func (t *textBuf) WriteString(s string) (int, error) { t.b = append(t.b, s...); return len(s), nil }
func (t *textBuf) Len() int                          { return len(t.b) }
func (t *textBuf) String() string                    { return string(t.b) }
func (t *textBuf) Reset()                            { t.b = t.b[:0] }

// trimSpaces drops the trailing spaces and returns how many there were.
func (t *textBuf) trimSpaces() int {
	n := len(t.b)
	for n > 0 && t.b[n-1] == ' ' {
		n--
	}
	k := len(t.b) - n
	t.b = t.b[:n]
	return k
}

func (p *inlineParser) flush() {
	if p.buf.Len() > 0 {
		p.out = append(p.out, &inl{kind: inlText, text: p.buf.String()})
		p.buf.Reset()
	}
}

func (p *inlineParser) node(n *inl) {
	p.flush()
	p.out = append(p.out, n)
}

// step parses what starts at s[i] and returns where the next thing starts.
func (p *inlineParser) step(i int) int {
	s := p.s
	c := s[i]
	switch {
	case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
		p.buf.WriteByte(s[i+1])
		return i + 2
	case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
		p.node(&inl{kind: inlBreak})
		return skipSpaces(s, i+2)
	case c == '`':
		n := runLen(s, i, '`')
		if end := closingBackticks(s, i+n, n); end >= 0 {
			p.node(&inl{kind: inlCode, text: codeSpanText(s[i+n : end])})
			return end + n
		}
		p.buf.WriteString(s[i : i+n])
		return i + n
	case c == '*' || c == '_' || c == '~':
		n := runLen(s, i, c)
		if c == '~' && n > 2 {
			p.buf.WriteString(s[i : i+n])
		} else {
			p.node(delimiter(s, i, n))
		}
		return i + n
	case c == '!' && i+1 < len(s) && s[i+1] == '[':
		if end, ok := p.link(i+1, inlImage); ok {
			return end
		}
	case c == '[':
		if end, ok := p.link(i, inlLink); ok {
			return end
		}
	case c == '<':
		if n, k := angleAt(s[i:]); n > 0 {
			text := s[i+1 : i+n-1]
			if k == inlHTML {
				text = s[i : i+n]
			}
			p.node(&inl{kind: k, text: text})
			return i + n
		}
	case c == '&':
		if semi := strings.IndexByte(s[i:min(len(s), i+33)], ';'); semi > 1 {
			if un := html.UnescapeString(s[i : i+semi+1]); un != s[i:i+semi+1] {
				if termsafe.Clean(un) != un {
					// &#27; and other control characters would reach
					// the terminal: shown as U+FFFD, as &#0; is.
					un = "\uFFFD"
				}
				p.buf.WriteString(un)
				return i + semi + 1
			}
		}
	case c == '\n':
		if p.buf.trimSpaces() >= 2 {
			p.node(&inl{kind: inlBreak})
		} else {
			p.buf.WriteByte(' ')
		}
		return skipSpaces(s, i+1)
	}
	p.buf.WriteByte(c)
	return i + 1
}

// link parses a link (or image) whose [ is at s[i].
func (p *inlineParser) link(i int, kind inlKind) (int, bool) {
	if p.closers == nil {
		p.closers = matchBrackets(p.s)
	}
	label, dest, end, ok := linkAt(p.s, i, p.closers[i])
	if ok {
		p.node(&inl{kind: kind, text: dest, children: parseInline(label)})
	}
	return end, ok
}

// delimiter is the run of n c's at s[i]: whether it can open or close
// emphasis (CommonMark's left- and right-flanking rules).
func delimiter(s string, i, n int) *inl {
	prev, next := ' ', ' '
	if i > 0 {
		prev, _ = utf8.DecodeLastRuneInString(s[:i])
	}
	if i+n < len(s) {
		next, _ = utf8.DecodeRuneInString(s[i+n:])
	}
	left := !unicode.IsSpace(next) && (!isPunct(next) || unicode.IsSpace(prev) || isPunct(prev))
	right := !unicode.IsSpace(prev) && (!isPunct(prev) || unicode.IsSpace(next) || isPunct(next))
	d := &inl{kind: inlDelim, ch: s[i], n: n, orig: n, open: left, close: right}
	if s[i] == '_' {
		d.open = left && (!right || isPunct(prev))
		d.close = right && (!left || isPunct(next))
	}
	return d
}

// resolveEmphasis matches delimiter runs into emphasis, strong and
// strikethrough nodes (CommonMark's "process emphasis": closers left to
// right, each with the nearest opener it can close; the delimiters in
// between become text); unmatched runs become text. It is linear but
// for the search of openers, bounded as CommonMark's openers_bottom.
func resolveEmphasis(nodes []*inl) []*inl {
	var out []*inl
	var openers []int // positions in out of runs that can open
	bottom := map[[3]int]int{}
	for _, n := range nodes {
		if n.kind != inlDelim {
			out = append(out, n)
			continue
		}
		key := [3]int{int(n.ch), n.orig % 3, 0}
		if n.open {
			key[2] = 1
		}
		for n.close && n.n > 0 {
			lo := min(bottom[key], len(openers))
			si := opener(out, openers, lo, n)
			if si < 0 {
				bottom[key] = len(openers)
				break
			}
			p := openers[si]
			o := out[p]
			use, kind := 1, inlEmph
			switch {
			case n.ch == '~':
				use, kind = n.n, inlStrike
			case o.n >= 2 && n.n >= 2:
				use, kind = 2, inlStrong
			}
			o.n -= use
			n.n -= use
			wrapped := &inl{kind: kind, children: literal(out[p+1:])}
			out, openers = append(out[:p+1], wrapped), openers[:si+1]
			if o.n == 0 {
				out, openers = append(out[:p], wrapped), openers[:si]
			}
		}
		if n.n > 0 {
			out = append(out, n)
			if n.open {
				openers = append(openers, len(out)-1)
			}
		}
	}
	return literal(out)
}

// opener is the index in openers (searched down to lo) of the nearest
// run that the closer c can close, or -1.
func opener(out []*inl, openers []int, lo int, c *inl) int {
	for si := len(openers) - 1; si >= lo; si-- {
		o := out[openers[si]]
		if o.ch != c.ch {
			continue
		}
		if c.ch == '~' {
			if o.n == c.n {
				return si
			}
			continue
		}
		if (o.close || c.open) && (o.orig+c.orig)%3 == 0 && (o.orig%3 != 0 || c.orig%3 != 0) {
			continue // the rule of 3
		}
		return si
	}
	return -1
}

// literal turns the delimiter runs left in nodes into text.
func literal(nodes []*inl) []*inl {
	out := nodes[:0:0]
	for _, n := range nodes {
		if n.kind == inlDelim {
			if n.n == 0 {
				continue
			}
			n = &inl{kind: inlText, text: strings.Repeat(string(n.ch), n.n)}
		}
		out = append(out, n)
	}
	return out
}

// matchBrackets pairs the brackets of s: for each [ the index of its ]
// (-1 when unmatched or not a [); escaped brackets and brackets in code
// spans do not count.
func matchBrackets(s string) []int {
	m := make([]int, len(s))
	var open []int
	for j := 0; j < len(s); j++ {
		m[j] = -1
		switch s[j] {
		case '\\':
			if j+1 < len(s) {
				j++
				m[j] = -1
			}
		case '`':
			n := runLen(s, j, '`')
			if e := closingBackticks(s, j+n, n); e >= 0 {
				n = e + n - j
			}
			for k := j; k < j+n; k++ {
				m[k] = -1
			}
			j += n - 1
		case '[':
			open = append(open, j)
		case ']':
			if len(open) > 0 {
				m[open[len(open)-1]] = j
				open = open[:len(open)-1]
			}
		}
	}
	return m
}

// linkAt parses an inline link [label](dest "title") at s[i] == '[',
// whose ] is at j (-1: none).
func linkAt(s string, i, j int) (label, dest string, end int, ok bool) {
	if j < 0 || j+1 >= len(s) || s[j+1] != '(' {
		return "", "", 0, false
	}
	label = s[i+1 : j]
	k := skipSpaces(s, j+2)
	if k < len(s) && s[k] == '<' {
		e := strings.IndexAny(s[k:], ">\n")
		if e < 0 || s[k+e] != '>' {
			return "", "", 0, false
		}
		dest, k = s[k+1:k+e], k+e+1
	} else {
		start, parens := k, 0
		for ; k < len(s) && s[k] > ' '; k++ {
			if s[k] == '\\' {
				k++
			} else if s[k] == '(' {
				if parens++; parens > 32 { // CommonMark's bound; keeps [a]([a]([a](… linear
					return "", "", 0, false
				}
			} else if s[k] == ')' {
				if parens == 0 {
					break
				}
				parens--
			}
		}
		dest = s[start:min(k, len(s))]
	}
	k = skipSpaces(s, k)
	if k < len(s) && (s[k] == '"' || s[k] == '\'' || s[k] == '(') {
		closeCh := s[k]
		if closeCh == '(' {
			closeCh = ')'
		}
		e := strings.IndexByte(s[k+1:], closeCh)
		if e < 0 {
			return "", "", 0, false
		}
		k = skipSpaces(s, k+1+e+1)
	}
	if k >= len(s) || s[k] != ')' {
		return "", "", 0, false
	}
	return label, dest, k + 1, true
}

// angleAt parses <scheme:uri>, <user@host> (autolinks) or an HTML tag at
// the start of s: its length and kind (0 when none).
func angleAt(s string) (int, inlKind) {
	// Neither an autolink nor a tag holds a '<': stopping at the next
	// one keeps a run of "<a<a<a…" without '>' linear (searching for
	// the '>' from every '<' was quadratic).
	end := strings.IndexAny(s[1:], "<>") + 1
	if end < 2 || s[end] != '>' {
		return 0, 0
	}
	in := s[1:end]
	if strings.ContainsAny(in, " \t\n") {
		c := in[0]
		if c == '/' && len(in) > 1 {
			c = in[1]
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '!' {
			return end + 1, inlHTML
		}
		return 0, 0
	}
	if colon := strings.IndexByte(in, ':'); colon >= 2 && colon <= 32 && isScheme(in[:colon]) {
		return end + 1, inlAutolink
	}
	if at := strings.IndexByte(in, '@'); at > 0 && strings.Contains(in[at:], ".") {
		return end + 1, inlAutolink
	}
	c := in[0]
	if c == '/' && len(in) > 1 {
		c = in[1]
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		return end + 1, inlHTML
	}
	return 0, 0
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-')) {
			return false
		}
	}
	return true
}

// closingBackticks is the start of the first run of exactly n backticks
// at or after i, or -1.
func closingBackticks(s string, i, n int) int {
	for i < len(s) {
		k := strings.IndexByte(s[i:], '`')
		if k < 0 {
			return -1
		}
		i += k
		m := runLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// codeSpanText is a code span's content: line ends as spaces, one space
// stripped from both ends when both have one.
func codeSpanText(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "" {
		s = s[1 : len(s)-1]
	}
	return s
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func isPunct(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }
