package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// markdown renders CommonMark (plus GFM pipe tables and ~~strikethrough~~)
// to ANSI text for a terminal: headings, emphasis, inline and fenced code
// (highlighted by highlight.go), nested lists, block quotes, links with
// their URL dimmed, rules and tables fitted to the width.
//
// It parses with mdblock.go and mdinline.go and styles with SGR
// sequences built here: nothing is registered or compiled at package
// init (glamour's chroma, bluemonday and goldmark cost tens of
// milliseconds and megabytes on every start of the binary). A markdown
// is not safe for concurrent use (the TUI calls it from bubbletea's
// goroutine only).
type markdown struct {
	hl *highlighter
	// sgr caches the SGR sequence of each inline style set.
	sgr map[inlineStyle]string
}

func newMarkdown() *markdown {
	return &markdown{hl: newHighlighter(), sgr: map[inlineStyle]string{}}
}

// render renders src wrapped at width columns (at least 10). The result
// has no trailing newline; every line ends with its styles reset.
func (md *markdown) render(src string, width int) string {
	width = max(width, 10)
	return strings.Join(md.blocks(parseMarkdown(src), width, false), "\n")
}

// Colours (xterm 256 palette, readable on dark and light backgrounds).
const (
	colHeading = 39  // blue
	colH1      = 212 // pink
	colLink    = 75  // light blue
	colCodeFg  = 209 // orange
	colCodeBg  = 236 // dark grey
	colQuote   = 244 // grey
	colRule    = 240
	colBullet  = 244
)

// fg is a foreground colour style.
func fg(c uint8) ansi.Style { return ansi.Style{}.ForegroundColor(ansi.IndexedColor(c)) }

// blocks renders blocks at width, separated by a blank line (by nothing
// when tight: the blocks of a tight list's item).
func (md *markdown) blocks(nodes []*mdNode, width int, tight bool) []string {
	var out []string
	for _, n := range nodes {
		lines := md.block(n, width, 0)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return out
}

// block renders one block as lines of at most width columns; depth is
// the number of bullet lists it is in.
func (md *markdown) block(n *mdNode, width, depth int) []string {
	switch n.kind {
	case mdHeading:
		return md.heading(n, width)
	case mdParagraph:
		return wrapLines(md.inline(n.text, 0), width)
	case mdRule:
		return []string{sgrText(fg(colRule), strings.Repeat("─", width))}
	case mdCode:
		return md.code(n.text, n.lang, width)
	case mdQuote:
		bar := sgrText(fg(colQuote), "▎ ")
		return prefixLines(md.blocks(n.children, width-2, false), bar, bar)
	case mdList:
		return md.list(n, width, depth)
	case mdTable:
		return md.table(n, width)
	case mdHTML:
		return wrapLines(sgrText(ansi.Style{}.Faint(), n.text), width)
	}
	return md.blocks(n.children, width, false)
}

// heading is "## Title" in bold colour; level 1 is also underlined.
func (md *markdown) heading(n *mdNode, width int) []string {
	st := ansi.Style{}.Bold().ForegroundColor(ansi.IndexedColor(colHeading))
	base := styleBold | styleHeading
	if n.level == 1 {
		st = ansi.Style{}.Bold().ForegroundColor(ansi.IndexedColor(colH1))
		base = styleBold | styleH1
	}
	marks := sgrText(st, strings.Repeat("#", n.level)+" ")
	return wrapLines(marks+md.inline(n.text, base), width)
}

// code renders a code block highlighted for lang (named above it),
// behind a dim gutter; long lines are wrapped, tabs are 4 columns.
func (md *markdown) code(src, lang string, width int) []string {
	src = strings.ReplaceAll(strings.TrimRight(src, "\n"), "\t", "    ")
	hl := md.hl.highlight(src, lang)
	var out []string
	for _, l := range strings.Split(hl, "\n") {
		if ansi.StringWidth(l) > width-2 {
			out = append(out, strings.Split(ansi.Hardwrap(l, max(width-2, 1), true), "\n")...)
			continue
		}
		out = append(out, l)
	}
	gutter := sgrText(fg(colRule), "│ ")
	out = prefixLines(carryStyles(out), gutter, gutter)
	if lang != "" {
		return append([]string{sgrText(fg(colRule), "╭ "+lang)}, out...)
	}
	return out
}

// list renders the items of a bullet or ordered list, their text
// aligned after the marker; nested bullets change shape with depth.
func (md *markdown) list(n *mdNode, width, depth int) []string {
	bullets := []string{"•", "◦", "▪"}
	inner := depth
	if !n.ordered {
		inner++
	}
	num := n.start
	last := strconv.Itoa(num + len(n.children) - 1)
	var out []string
	for _, it := range n.children {
		var mark string
		if n.ordered {
			s := strconv.Itoa(num)
			mark = strings.Repeat(" ", max(len(last)-len(s), 0)) + s + string(n.marker) + " "
			num++
		} else {
			mark = bullets[depth%len(bullets)] + " "
		}
		mw := ansi.StringWidth(mark)
		var body []string
		for k, c := range it.children {
			if k > 0 && !n.tight {
				body = append(body, "")
			}
			body = append(body, md.block(c, width-mw, inner)...)
		}
		if len(body) == 0 {
			body = []string{""}
		}
		if len(out) > 0 && !n.tight {
			out = append(out, "")
		}
		out = append(out, prefixLines(body, sgrText(fg(colBullet), mark), strings.Repeat(" ", mw))...)
	}
	return out
}

// table renders a GFM pipe table: columns aligned as the delimiter row
// says, the header bold and underlined by a rule, narrowed to width by
// wrapping the widest cells.
func (md *markdown) table(n *mdNode, width int) []string {
	cols := len(n.aligns)
	if cols == 0 || len(n.rows) == 0 {
		return nil
	}
	rows := make([][]string, len(n.rows))
	widths := make([]int, cols)
	for ri, row := range n.rows {
		for i := range cols {
			cell := ""
			if i < len(row) {
				cell = strings.ReplaceAll(md.inline(row[i], 0), "\n", " ")
			}
			if ri == 0 {
				cell = sgrText(ansi.Style{}.Bold(), ansi.Strip(cell))
			}
			rows[ri] = append(rows[ri], cell)
			widths[i] = max(widths[i], ansi.StringWidth(cell))
		}
	}
	fitColumns(widths, width-3*(cols-1))
	sep := sgrText(fg(colRule), " │ ")
	var out []string
	for ri, row := range rows {
		cellLines := make([][]string, cols)
		height := 1
		for i, cell := range row {
			cellLines[i] = wrapLines(cell, widths[i])
			height = max(height, len(cellLines[i]))
		}
		for l := range height {
			parts := make([]string, cols)
			for i := range cols {
				s := ""
				if l < len(cellLines[i]) {
					s = cellLines[i][l]
				}
				parts[i] = alignCell(s, widths[i], n.aligns[i])
			}
			out = append(out, ansi.Truncate(strings.TrimRight(strings.Join(parts, sep), " "), width, "…"))
		}
		if ri == 0 {
			rules := make([]string, cols)
			for i, w := range widths {
				rules[i] = strings.Repeat("─", w)
			}
			out = append(out, sgrText(fg(colRule), ansi.Truncate(strings.Join(rules, "─┼─"), width, "")))
		}
	}
	return out
}

// inline renders inline markdown, unwrapped, with base styles.
func (md *markdown) inline(src string, base inlineStyle) string {
	w := &inlineWriter{md: md}
	md.inlines(w, parseInline(src), base)
	return w.String()
}

func (md *markdown) inlines(w *inlineWriter, nodes []*inl, st inlineStyle) {
	for _, n := range nodes {
		switch n.kind {
		case inlText:
			w.text(n.text, st)
		case inlBreak:
			w.text("\n", st)
		case inlCode:
			w.text(n.text, st|styleCode)
		case inlEmph:
			md.inlines(w, n.children, st|styleItalic)
		case inlStrong:
			md.inlines(w, n.children, st|styleBold)
		case inlStrike:
			md.inlines(w, n.children, st|styleStrike)
		case inlLink:
			before := w.b.Len()
			md.inlines(w, n.children, st|styleLink)
			label := ansi.Strip(w.b.String()[before:])
			if n.text != "" && n.text != label && n.text != "mailto:"+label {
				w.text(" ("+n.text+")", st|styleDim)
			}
		case inlAutolink:
			w.text(n.text, st|styleLink)
		case inlImage:
			alt := &inlineWriter{md: md}
			md.inlines(alt, n.children, 0)
			w.text("[image: "+ansi.Strip(alt.String())+"] ("+n.text+")", st|styleDim)
		case inlHTML:
			w.text(n.text, st|styleDim)
		}
	}
}

// fitColumns narrows the widest columns, one column at a time, until
// the widths sum to at most avail (no column below 3 columns wide).
func fitColumns(widths []int, avail int) {
	sum := 0
	for _, w := range widths {
		sum += w
	}
	for sum > avail {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= 3 {
			return
		}
		widths[widest]--
		sum--
	}
}

// alignCell pads s to w columns as a says (left when none).
func alignCell(s string, w int, a cellAlign) string {
	pad := max(w-ansi.StringWidth(s), 0)
	switch a {
	case alignRight:
		return strings.Repeat(" ", pad) + s
	case alignCenter:
		return strings.Repeat(" ", pad/2) + s + strings.Repeat(" ", pad-pad/2)
	}
	return s + strings.Repeat(" ", pad)
}

// inlineStyle is a set of inline styles in force.
type inlineStyle uint16

const (
	styleBold inlineStyle = 1 << iota
	styleItalic
	styleStrike
	styleCode
	styleLink
	styleDim
	styleHeading
	styleH1
)

// sgrOf is the SGR sequence that sets exactly st (after a reset).
func (md *markdown) sgrOf(st inlineStyle) string {
	if s, ok := md.sgr[st]; ok {
		return s
	}
	a := ansi.Style{}.Reset()
	if st&styleBold != 0 {
		a = a.Bold()
	}
	if st&styleDim != 0 {
		a = a.Faint()
	}
	if st&styleItalic != 0 {
		a = a.Italic(true)
	}
	if st&styleStrike != 0 {
		a = a.Strikethrough(true)
	}
	switch {
	case st&styleCode != 0:
		a = a.ForegroundColor(ansi.IndexedColor(colCodeFg)).BackgroundColor(ansi.IndexedColor(colCodeBg))
	case st&styleLink != 0:
		a = a.Underline(true).ForegroundColor(ansi.IndexedColor(colLink))
	case st&styleH1 != 0:
		a = a.Underline(true).ForegroundColor(ansi.IndexedColor(colH1))
	case st&styleHeading != 0:
		a = a.ForegroundColor(ansi.IndexedColor(colHeading))
	}
	s := a.String()
	md.sgr[st] = s
	return s
}

// inlineWriter writes text, switching SGR only where the style changes.
type inlineWriter struct {
	md  *markdown
	b   strings.Builder
	cur inlineStyle
}

func (w *inlineWriter) text(s string, st inlineStyle) {
	if s == "" {
		return
	}
	if st != w.cur {
		if st == 0 {
			w.b.WriteString(ansi.ResetStyle)
		} else {
			w.b.WriteString(w.md.sgrOf(st))
		}
		w.cur = st
	}
	w.b.WriteString(s)
}

func (w *inlineWriter) String() string {
	if w.cur != 0 {
		w.b.WriteString(ansi.ResetStyle)
		w.cur = 0
	}
	return w.b.String()
}

// sgrText is s in style st, reset after.
func sgrText(st ansi.Style, s string) string { return st.String() + s + ansi.ResetStyle }

// wrapLines word-wraps s at width (ANSI aware; words longer than width
// are broken) into lines that each carry their own styles.
func wrapLines(s string, width int) []string {
	if s == "" {
		return nil
	}
	width = max(width, 1)
	var lines []string
	for _, l := range strings.Split(ansi.Wrap(s, width, " "), "\n") {
		if ansi.StringWidth(l) > width { // ansi.Wrap leaves a long word with styles inside whole
			lines = append(lines, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
			continue
		}
		lines = append(lines, l)
	}
	return carryStyles(lines)
}

// carryStyles makes each line self-contained: the SGR state in force at
// the end of a line is set again at the start of the next, and reset at
// the end of the line, so prefixes (gutters, quote bars, list indents)
// and the terminal's next line are not painted. It relies on the SGR
// sequences of this file, each of which sets the whole state.
func carryStyles(lines []string) []string {
	carry := ""
	for i, l := range lines {
		l = carry + l
		if last := lastSGR(l); last != "" {
			carry = last
			if last == ansi.ResetStyle || last == "\x1b[0m" {
				carry = ""
			}
		}
		if carry != "" {
			l += ansi.ResetStyle
		}
		lines[i] = l
	}
	return lines
}

// lastSGR is the last SGR sequence (ESC [ ... m) in s, or "".
func lastSGR(s string) string {
	for end := len(s); end > 0; {
		i := strings.LastIndex(s[:end], "\x1b[")
		if i < 0 {
			return ""
		}
		j := i + 2
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
			j++
		}
		if j < len(s) && s[j] == 'm' {
			return s[i : j+1]
		}
		end = i
	}
	return ""
}

// prefixLines puts first before the first line and rest before the
// others (not before empty lines when rest is only spaces).
func prefixLines(lines []string, first, rest string) []string {
	blankRest := strings.TrimSpace(rest) == ""
	for i := range lines {
		switch {
		case i == 0:
			lines[i] = first + lines[i]
		case lines[i] == "" && blankRest: // no trailing spaces
		default:
			lines[i] = rest + lines[i]
		}
	}
	return lines
}
