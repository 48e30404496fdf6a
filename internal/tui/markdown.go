package tui

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdown renders CommonMark (plus GFM pipe tables and ~~strikethrough~~)
// to ANSI text for a terminal: headings, emphasis, inline and fenced code
// (highlighted by highlight.go), nested lists, block quotes, links with
// their URL dimmed, rules and tables fitted to the width.
//
// It parses with goldmark's core parser only (not goldmark/extension,
// whose linkify regexes cost milliseconds at every start of the binary)
// and styles with SGR sequences built here: nothing is registered at
// package init. A markdown is not safe for concurrent use (the TUI calls
// it from bubbletea's goroutine only).
type markdown struct {
	p  parser.Parser
	hl *highlighter
	// sgr caches the SGR sequence of each inline style set.
	sgr map[inlineStyle]string
}

// newMarkdown builds the parser (CommonMark blocks and inlines, the
// table paragraph transformer and the strikethrough inline parser).
func newMarkdown() *markdown {
	p := parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(append(parser.DefaultInlineParsers(),
			util.Prioritized(strikeParser{}, 500))...),
		parser.WithParagraphTransformers(append(parser.DefaultParagraphTransformers(),
			util.Prioritized(tableTransformer{}, 200))...),
	)
	return &markdown{p: p, hl: newHighlighter(), sgr: map[inlineStyle]string{}}
}

// render renders src wrapped at width columns (at least 10). The result
// has no trailing newline; every line ends with its styles reset.
func (md *markdown) render(src string, width int) string {
	width = max(width, 10)
	b := []byte(src)
	doc := md.p.Parse(text.NewReader(b))
	r := &mdRender{md: md, src: b}
	return strings.Join(r.blocks(doc, width, false), "\n")
}

// mdRender is one rendering: the source the AST's segments point into.
type mdRender struct {
	md  *markdown
	src []byte
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

// blocks renders the block children of parent at width, separated by a
// blank line (by nothing when tight: the items of a tight list).
func (r *mdRender) blocks(parent ast.Node, width int, tight bool) []string {
	var out []string
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		lines := r.block(n, width)
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

// block renders one block node as lines of at most width columns.
func (r *mdRender) block(n ast.Node, width int) []string {
	switch n := n.(type) {
	case *ast.Heading:
		return r.heading(n, width)
	case *ast.Paragraph, *ast.TextBlock:
		return wrapLines(r.inline(n, 0), width)
	case *ast.ThematicBreak:
		return []string{sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colRule)), strings.Repeat("─", width))}
	case *ast.FencedCodeBlock:
		return r.code(n, string(n.Language(r.src)), width)
	case *ast.CodeBlock:
		return r.code(n, "", width)
	case *ast.Blockquote:
		bar := sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colQuote)), "▎ ")
		return prefixLines(r.blocks(n, width-2, false), bar, bar)
	case *ast.List:
		return r.list(n, width)
	case *ast.HTMLBlock:
		return r.rawLines(n, width)
	case *east.Table:
		return r.table(n, width)
	}
	if n.HasChildren() {
		return r.blocks(n, width, false)
	}
	return r.rawLines(n, width)
}

// heading is "## Title" in bold colour; level 1 is also underlined.
func (r *mdRender) heading(n *ast.Heading, width int) []string {
	st := ansi.Style{}.Bold().ForegroundColor(ansi.IndexedColor(colHeading))
	base := inlineStyle(styleBold | styleHeading)
	if n.Level == 1 {
		st = ansi.Style{}.Bold().ForegroundColor(ansi.IndexedColor(colH1))
		base = styleBold | styleH1
	}
	marks := sgrText(st, strings.Repeat("#", n.Level)+" ")
	return wrapLines(marks+r.inline(n, base), width)
}

// rawLines are the node's source lines as they are (HTML blocks).
func (r *mdRender) rawLines(n ast.Node, width int) []string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(r.src))
	}
	return wrapLines(strings.TrimRight(b.String(), "\n"), width)
}

// code renders a code block highlighted for lang, behind a dim gutter;
// long lines are wrapped, tabs are 4 columns.
func (r *mdRender) code(n ast.Node, lang string, width int) []string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(r.src))
	}
	src := strings.ReplaceAll(strings.TrimRight(b.String(), "\n"), "\t", "    ")
	hl := r.md.hl.highlight(src, lang)
	gutter := sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colRule)), "│ ")
	var out []string
	for _, l := range strings.Split(hl, "\n") {
		if ansi.StringWidth(l) > width-2 {
			out = append(out, strings.Split(ansi.Hardwrap(l, max(width-2, 1), true), "\n")...)
			continue
		}
		out = append(out, l)
	}
	out = carryStyles(out)
	if lang != "" {
		label := sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colRule)), "╭ "+lang)
		return append([]string{label}, prefixLines(out, gutter, gutter)...)
	}
	return prefixLines(out, gutter, gutter)
}

// list renders the items of a bullet or ordered list, nested lists
// indented under their item's text.
func (r *mdRender) list(n *ast.List, width int) []string {
	bullets := []string{"•", "◦", "▪"}
	depth := 0
	for p := n.Parent(); p != nil; p = p.Parent() {
		if l, ok := p.(*ast.List); ok && !l.IsOrdered() {
			depth++
		}
	}
	num := n.Start
	last := num + n.ChildCount() - 1
	var out []string
	for it := n.FirstChild(); it != nil; it = it.NextSibling() {
		var mark string
		if n.IsOrdered() {
			mark = strconv.Itoa(num) + string(n.Marker) + " "
			mark = strings.Repeat(" ", len(strconv.Itoa(last))-len(strconv.Itoa(num))) + mark
			num++
		} else {
			mark = bullets[depth%len(bullets)] + " "
		}
		mw := ansi.StringWidth(mark)
		body := r.blocks(it, width-mw, n.IsTight)
		if len(body) == 0 {
			body = []string{""}
		}
		if len(out) > 0 && !n.IsTight {
			out = append(out, "")
		}
		first := sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colBullet)), mark)
		out = append(out, prefixLines(body, first, strings.Repeat(" ", mw))...)
	}
	return out
}

// table renders a GFM pipe table: columns aligned as the delimiter row
// says, the header bold and underlined by a rule, narrowed to width by
// wrapping the widest cells.
func (r *mdRender) table(n *east.Table, width int) []string {
	var rows [][]string
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, strings.ReplaceAll(r.inline(c, 0), "\n", " "))
		}
		rows = append(rows, cells)
	}
	cols := len(n.Alignments)
	if cols == 0 || len(rows) == 0 {
		return nil
	}
	widths := make([]int, cols)
	for _, row := range rows {
		for i := 0; i < cols && i < len(row); i++ {
			widths[i] = max(widths[i], ansi.StringWidth(row[i]))
		}
	}
	fitColumns(widths, width-3*(cols-1))
	sep := sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colRule)), " │ ")
	var out []string
	for ri, row := range rows {
		cellLines := make([][]string, cols)
		height := 1
		for i := range cols {
			cell := ""
			if i < len(row) {
				cell = row[i]
			}
			if ri == 0 {
				cell = sgrText(ansi.Style{}.Bold(), ansi.Strip(cell))
			}
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
				parts[i] = alignCell(s, widths[i], n.Alignments[i])
			}
			out = append(out, ansi.Truncate(strings.TrimRight(strings.Join(parts, sep), " "), width, "…"))
		}
		if ri == 0 {
			rules := make([]string, cols)
			for i, w := range widths {
				rules[i] = strings.Repeat("─", w)
			}
			line := strings.Join(rules, "─┼─")
			out = append(out, sgrText(ansi.Style{}.ForegroundColor(ansi.IndexedColor(colRule)), ansi.Truncate(line, width, "")))
		}
	}
	return out
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
func alignCell(s string, w int, a east.Alignment) string {
	pad := max(w-ansi.StringWidth(s), 0)
	switch a {
	case east.AlignRight:
		return strings.Repeat(" ", pad) + s
	case east.AlignCenter:
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

// inline renders the inline children of n, unwrapped, with base styles.
func (r *mdRender) inline(n ast.Node, base inlineStyle) string {
	w := &inlineWriter{md: r.md}
	r.inlines(w, n, base)
	return w.String()
}

func (r *mdRender) inlines(w *inlineWriter, parent ast.Node, st inlineStyle) {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		r.inlineNode(w, n, st)
	}
}

func (r *mdRender) inlineNode(w *inlineWriter, n ast.Node, st inlineStyle) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if !n.IsRaw() {
			v = unescape(v)
		}
		w.text(string(v), st)
		switch {
		case n.HardLineBreak():
			w.text("\n", st)
		case n.SoftLineBreak():
			w.text(" ", st)
		}
	case *ast.String:
		w.text(string(n.Value), st)
	case *ast.CodeSpan:
		var b bytes.Buffer
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(bytes.ReplaceAll(c.Segment.Value(r.src), []byte("\n"), []byte(" ")))
			case *ast.String:
				b.Write(c.Value)
			}
		}
		w.text(b.String(), st|styleCode)
	case *ast.Emphasis:
		if n.Level >= 2 {
			r.inlines(w, n, st|styleBold)
		} else {
			r.inlines(w, n, st|styleItalic)
		}
	case *east.Strikethrough:
		r.inlines(w, n, st|styleStrike)
	case *ast.Link:
		before := w.b.Len()
		r.inlines(w, n, st|styleLink)
		label := ansi.Strip(w.b.String()[before:])
		if dest := string(n.Destination); dest != "" && dest != label && "mailto:"+label != dest {
			w.text(" ("+dest+")", st|styleDim)
		}
	case *ast.AutoLink:
		w.text(string(n.URL(r.src)), st|styleLink)
	case *ast.Image:
		alt := ansi.Strip(r.inline(n, 0))
		w.text("[image: "+alt+"]", st|styleDim)
		w.text(" ("+string(n.Destination)+")", st|styleDim)
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			w.text(string(seg.Value(r.src)), st|styleDim)
		}
	default:
		r.inlines(w, n, st)
	}
}

// unescape resolves backslash escapes and entity references as
// CommonMark says text shows them.
func unescape(v []byte) []byte {
	if bytes.IndexByte(v, '\\') >= 0 {
		v = util.UnescapePunctuations(v)
	}
	if bytes.IndexByte(v, '&') >= 0 {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(v))
	}
	return v
}

// sgrText is s in style st, reset after.
func sgrText(st ansi.Style, s string) string { return st.String() + s + ansi.ResetStyle }

// wrapLines word-wraps s at width (ANSI aware; words longer than width
// are broken) into lines that each carry their own styles.
func wrapLines(s string, width int) []string {
	if s == "" {
		return nil
	}
	return carryStyles(strings.Split(ansi.Wrap(s, max(width, 1), " "), "\n"))
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

// prefixLines puts first before the first line and rest before the others.
func prefixLines(lines []string, first, rest string) []string {
	for i := range lines {
		if i == 0 {
			lines[i] = first + lines[i]
		} else {
			lines[i] = rest + lines[i]
		}
	}
	return lines
}
