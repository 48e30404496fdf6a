package tui

import (
	"strconv"
	"strings"
)

// The block half of the markdown parser: CommonMark's block structure
// (ATX and setext headings, fenced and indented code, block quotes with
// lazy continuation, nested bullet and ordered lists, thematic breaks,
// HTML blocks, paragraphs) plus GFM pipe tables, enough for what models
// write. It is hand-rolled rather than goldmark so that nothing runs at
// package init (goldmark's parser and util packages build regexes and
// an entity table at every start of the binary). Differences from the
// spec: no reference links or link definitions, and a list's looseness
// is judged from blank lines at its items' top level only.

// mdNode is a block of a parsed document.
type mdNode struct {
	kind     mdKind
	level    int       // heading: 1–6
	text     string    // paragraph, heading: inline markdown; code, html: the text
	lang     string    // fenced code: the info string's first word
	children []*mdNode // quote: blocks; list: items; item: blocks
	ordered  bool      // list
	start    int       // ordered list: the first number
	marker   byte      // list: '-', '+', '*', '.' or ')'
	tight    bool      // list: no blank lines between items
	aligns   []cellAlign
	rows     [][]string // table: the header row first; cells are inline markdown
}

type mdKind uint8

const (
	mdParagraph mdKind = iota
	mdHeading
	mdCode
	mdQuote
	mdList
	mdItem
	mdRule
	mdTable
	mdHTML
)

// cellAlign is a table column's alignment.
type cellAlign uint8

const (
	alignNone cellAlign = iota
	alignLeft
	alignRight
	alignCenter
)

// parseMarkdown parses src into blocks.
func parseMarkdown(src string) []*mdNode {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	return parseBlocks(strings.Split(src, "\n"), 0)
}

// maxNesting bounds how deep block quotes and lists nest; deeper
// markers are paragraph text. Each level copies its lines and narrows
// the rendering, so ">>>>…" ten thousand deep took seconds (minutes at
// 100 KB) on the TUI's only goroutine.
const maxNesting = 16

// parseBlocks parses lines (a document or a container's content) at
// depth containers deep.
func parseBlocks(lines []string, depth int) []*mdNode {
	nest := depth < maxNesting
	var out []*mdNode
	for i := 0; i < len(lines); {
		l := lines[i]
		if isBlank(l) {
			i++
			continue
		}
		var n *mdNode
		switch {
		case indentCols(l) >= 4:
			n, i = indentedCode(lines, i)
		case fenceAt(l).n > 0:
			n, i = fencedCode(lines, i)
		case atxLevel(l) > 0:
			n, i = &mdNode{kind: mdHeading, level: atxLevel(l), text: atxText(l)}, i+1
		case isRule(l):
			n, i = &mdNode{kind: mdRule}, i+1
		case nest && isQuote(l):
			n, i = quote(lines, i, depth)
		case nest && listMarkerAt(l).width > 0:
			n, i = list(lines, i, depth)
		case isTableStart(lines, i):
			n, i = table(lines, i)
		case isHTMLStart(l):
			j := i
			for j < len(lines) && !isBlank(lines[j]) {
				j++
			}
			n, i = &mdNode{kind: mdHTML, text: strings.Join(lines[i:j], "\n")}, j
		default:
			n, i = paragraph(lines, i)
		}
		out = append(out, n)
	}
	return out
}

// paragraph collects lines up to a blank line or a block that
// interrupts a paragraph; an underline of = or - makes it a heading.
func paragraph(lines []string, i int) (*mdNode, int) {
	text := []string{strings.TrimLeft(lines[i], " \t")}
	j := i + 1
	for ; j < len(lines); j++ {
		l := lines[j]
		if isBlank(l) {
			break
		}
		if lv := setextLevel(l); lv > 0 {
			return &mdNode{kind: mdHeading, level: lv, text: strings.TrimSpace(strings.Join(text, "\n"))}, j + 1
		}
		if interrupts(l) || isTableStart(lines, j) {
			break
		}
		text = append(text, strings.TrimLeft(l, " \t"))
	}
	return &mdNode{kind: mdParagraph, text: strings.TrimRight(strings.Join(text, "\n"), " \t")}, j
}

// interrupts is whether l starts a block that ends a paragraph.
func interrupts(l string) bool {
	if indentCols(l) >= 4 {
		return false
	}
	if m := listMarkerAt(l); m.width > 0 {
		return !m.empty && (!m.ordered || m.start == 1)
	}
	return fenceAt(l).n > 0 || atxLevel(l) > 0 || isRule(l) || isQuote(l) || isHTMLStart(l)
}

// indentedCode is a block of lines indented by 4 columns or more.
func indentedCode(lines []string, i int) (*mdNode, int) {
	var code []string
	j := i
	for ; j < len(lines) && (isBlank(lines[j]) || indentCols(lines[j]) >= 4); j++ {
		code = append(code, stripIndent(lines[j], 4))
	}
	for len(code) > 0 && isBlank(code[len(code)-1]) {
		code = code[:len(code)-1]
	}
	return &mdNode{kind: mdCode, text: strings.Join(code, "\n")}, j
}

// fence is an opening code fence: its indent, character and length.
type fence struct {
	indent, n int
	ch        byte
	info      string
}

// fenceAt is the fence l opens (n = 0 when none).
func fenceAt(l string) fence {
	ind := indentCols(l)
	if ind > 3 {
		return fence{}
	}
	t := strings.TrimLeft(l, " \t")
	if t == "" || t[0] != '`' && t[0] != '~' {
		return fence{}
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	info := strings.TrimSpace(t[n:])
	if n < 3 || t[0] == '`' && strings.Contains(info, "`") {
		return fence{}
	}
	return fence{indent: ind, n: n, ch: t[0], info: info}
}

// fenceOf is the fence line opens whatever its indentation (the
// streaming view tracks fences in nested list items too).
func fenceOf(line string) fence { return fenceAt(strings.TrimLeft(line, " \t")) }

// closes is whether line closes the block f opened (its indentation
// aside).
func (f fence) closes(line string) bool {
	t := strings.TrimSpace(line)
	return f.n > 0 && strings.HasPrefix(t, strings.Repeat(string(f.ch), f.n)) && strings.Trim(t, string(f.ch)) == ""
}

// fencedCode is a fenced block; an unclosed fence (mid-stream) runs to
// the end.
func fencedCode(lines []string, i int) (*mdNode, int) {
	f := fenceAt(lines[i])
	var code []string
	j := i + 1
	for ; j < len(lines); j++ {
		l := lines[j]
		if indentCols(l) <= 3 && f.closes(l) {
			j++
			break
		}
		code = append(code, stripIndent(l, f.indent))
	}
	lang, _, _ := strings.Cut(f.info, " ")
	return &mdNode{kind: mdCode, lang: strings.TrimPrefix(lang, "."), text: strings.Join(code, "\n")}, j
}

// atxLevel is the level of the ATX heading l (# Title), 0 when it is none.
func atxLevel(l string) int {
	if indentCols(l) > 3 {
		return 0
	}
	t := strings.TrimLeft(l, " \t")
	n := len(t) - len(strings.TrimLeft(t, "#"))
	if n < 1 || n > 6 || n < len(t) && t[n] != ' ' && t[n] != '\t' {
		return 0
	}
	return n
}

// atxText is the heading's text without the #s around it.
func atxText(l string) string {
	t := strings.TrimSpace(strings.TrimLeft(strings.TrimLeft(l, " \t"), "#"))
	if end := strings.TrimRight(t, "#"); end == "" || strings.HasSuffix(end, " ") || strings.HasSuffix(end, "\t") {
		t = strings.TrimSpace(end)
	}
	return t
}

// setextLevel is 1 for a === underline, 2 for ---, else 0.
func setextLevel(l string) int {
	if indentCols(l) > 3 {
		return 0
	}
	t := strings.TrimSpace(l)
	switch {
	case t != "" && strings.Trim(t, "=") == "":
		return 1
	case t != "" && strings.Trim(t, "-") == "":
		return 2
	}
	return 0
}

// isRule is whether l is a thematic break (---, ***, ___, spaced too).
func isRule(l string) bool {
	if indentCols(l) > 3 {
		return false
	}
	t := strings.TrimSpace(l)
	if t == "" || !strings.ContainsRune("-*_", rune(t[0])) {
		return false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case t[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

func isQuote(l string) bool {
	return indentCols(l) <= 3 && strings.HasPrefix(strings.TrimLeft(l, " \t"), ">")
}

// quote is a block quote: lines starting with >, and lazy continuation
// lines of its last paragraph.
func quote(lines []string, i, depth int) (*mdNode, int) {
	var inner []string
	var fences fenceState
	j := i
	for ; j < len(lines); j++ {
		l := lines[j]
		if isQuote(l) {
			t := strings.TrimLeft(l, " \t")[1:]
			if strings.HasPrefix(t, " ") || strings.HasPrefix(t, "\t") {
				t = t[1:]
			}
			inner = append(inner, t)
			fences.add(t)
			continue
		}
		if isBlank(l) || isBlank(inner[len(inner)-1]) || interrupts(l) || fences.inside() {
			break
		}
		inner = append(inner, l)
		fences.add(l)
	}
	return &mdNode{kind: mdQuote, children: parseBlocks(inner, depth+1)}, j
}

// listMarker is a list item's marker at the start of a line.
type listMarker struct {
	width   int // columns up to the item's content (0: not a marker)
	ordered bool
	start   int
	char    byte // '-', '+', '*', '.', ')'
	empty   bool // nothing after the marker
	content string
}

// listMarkerAt parses the list marker starting l, if any.
func listMarkerAt(l string) listMarker {
	ind := indentCols(l)
	if ind > 3 {
		return listMarker{}
	}
	t := strings.TrimLeft(l, " \t")
	m := listMarker{}
	n := 0
	switch {
	case t != "" && (t[0] == '-' || t[0] == '+' || t[0] == '*'):
		m.char, n = t[0], 1
	default:
		for n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9' {
			n++
		}
		if n == 0 || n >= len(t) || t[n] != '.' && t[n] != ')' {
			return listMarker{}
		}
		m.ordered, m.char = true, t[n]
		m.start, _ = strconv.Atoi(t[:n])
		n++
	}
	rest := t[n:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return listMarker{}
	}
	content := strings.TrimLeft(rest, " \t")
	spaces := indentCols(rest)
	if content == "" {
		m.empty, spaces = true, 1
	} else if spaces > 4 { // indented code inside the item
		spaces = 1
		content = stripIndent(rest, 1)
	}
	m.width, m.content = ind+n+spaces, content
	return m
}

// list parses consecutive items with the same kind of marker.
func list(lines []string, i, depth int) (*mdNode, int) {
	first := listMarkerAt(lines[i])
	n := &mdNode{kind: mdList, ordered: first.ordered, start: first.start, marker: first.char, tight: true}
	for i < len(lines) {
		m := listMarkerAt(lines[i])
		if m.width == 0 || m.ordered != first.ordered || m.char != first.char {
			break
		}
		item := []string{m.content}
		var fences fenceState
		fences.add(m.content)
		j := i + 1
	lines:
		for ; j < len(lines); j++ {
			l := lines[j]
			switch {
			case isBlank(l):
				item = append(item, "")
			case indentCols(l) >= m.width:
				item = append(item, stripIndent(l, m.width))
			case !isBlank(item[len(item)-1]) && !interrupts(l) && listMarkerAt(l).width == 0 && !fences.inside():
				item = append(item, strings.TrimLeft(l, " \t")) // lazy continuation
			default:
				break lines
			}
			fences.add(item[len(item)-1])
		}
		trailing := 0
		for len(item) > 1 && item[len(item)-1] == "" {
			item, trailing = item[:len(item)-1], trailing+1
		}
		if looseItem(item) {
			n.tight = false
		}
		n.children = append(n.children, &mdNode{kind: mdItem, children: parseBlocks(item, depth+1)})
		i = j
		if trailing > 0 {
			if next := listAt(lines, i); next.width == 0 || next.ordered != first.ordered || next.char != first.char {
				break
			}
			n.tight = false
		}
	}
	return n, i
}

// listAt is the list marker of lines[i] (none past the end).
func listAt(lines []string, i int) listMarker {
	if i >= len(lines) {
		return listMarker{}
	}
	return listMarkerAt(lines[i])
}

// looseItem is whether an item's own blocks are separated by a blank
// line (outside code blocks, not inside a nested list).
func looseItem(item []string) bool {
	open := fence{}
	for k, l := range item {
		if open.n > 0 {
			if open.closes(l) {
				open = fence{}
			}
			continue
		}
		if f := fenceAt(l); f.n > 0 {
			open = f
			continue
		}
		if l == "" && k+1 < len(item) && indentCols(item[k+1]) == 0 && listMarkerAt(item[k+1]).width == 0 {
			return true
		}
	}
	return false
}

// fenceState follows whether the lines added so far end inside a fenced
// code block (asked once per line: rescanning them all made a long lazy
// quote or list item quadratic).
type fenceState struct{ open fence }

func (s *fenceState) add(l string) {
	if s.open.n > 0 {
		if s.open.closes(l) {
			s.open = fence{}
		}
	} else if f := fenceAt(l); f.n > 0 {
		s.open = f
	}
}

func (s *fenceState) inside() bool { return s.open.n > 0 }

// isHTMLStart is whether l starts an HTML block: a tag or comment.
func isHTMLStart(l string) bool {
	if indentCols(l) > 3 {
		return false
	}
	t := strings.TrimLeft(l, " \t")
	if len(t) < 3 || t[0] != '<' {
		return false
	}
	c := t[1]
	if c == '/' {
		c = t[2]
	}
	return (c == '!' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && strings.Contains(t, ">")
}

// isTableStart is whether lines[i] is a table's header row: the next
// line is a delimiter row with as many cells.
func isTableStart(lines []string, i int) bool {
	if i+1 >= len(lines) || !strings.Contains(lines[i], "|") || indentCols(lines[i]) > 3 {
		return false
	}
	aligns := tableDelimiter(lines[i+1])
	return aligns != nil && len(tableCells(lines[i])) == len(aligns)
}

// table parses a GFM pipe table: header, delimiter row, then rows up to
// a blank line or another block.
func table(lines []string, i int) (*mdNode, int) {
	n := &mdNode{kind: mdTable, aligns: tableDelimiter(lines[i+1])}
	n.rows = append(n.rows, tableCells(lines[i]))
	j := i + 2
	for ; j < len(lines) && !isBlank(lines[j]) && !interrupts(lines[j]); j++ {
		cells := tableCells(lines[j])
		for len(cells) < len(n.aligns) {
			cells = append(cells, "")
		}
		n.rows = append(n.rows, cells[:len(n.aligns)])
	}
	return n, j
}

// tableCells splits a row at unescaped pipes (\| is a pipe in a cell).
func tableCells(l string) []string {
	t := strings.TrimSpace(l)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, "\\|") {
		t = t[:len(t)-1]
	}
	var cells []string
	start := 0
	for k := 0; k <= len(t); k++ {
		if k == len(t) || t[k] == '|' && (k == 0 || t[k-1] != '\\') {
			cells = append(cells, strings.ReplaceAll(strings.TrimSpace(t[start:k]), "\\|", "|"))
			start = k + 1
		}
	}
	return cells
}

// tableDelimiter parses a delimiter row (| :-- | --: | :-: |) into the
// columns' alignments, nil when l is not one.
func tableDelimiter(l string) []cellAlign {
	if indentCols(l) > 3 {
		return nil
	}
	t := strings.TrimSpace(l)
	if !strings.Contains(t, "-") || strings.Trim(t, "-|: \t") != "" || !strings.ContainsAny(t, "|:") {
		return nil
	}
	var aligns []cellAlign
	for _, c := range tableCells(t) {
		left, right := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":")
		if d := strings.Trim(c, ":"); d == "" || strings.Trim(d, "-") != "" {
			return nil
		}
		switch {
		case left && right:
			aligns = append(aligns, alignCenter)
		case left:
			aligns = append(aligns, alignLeft)
		case right:
			aligns = append(aligns, alignRight)
		default:
			aligns = append(aligns, alignNone)
		}
	}
	return aligns
}

// indentCols is the width of l's leading spaces and tabs (tab stops of 4).
func indentCols(l string) int {
	col := 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col
		}
	}
	return col
}

// stripIndent removes up to n columns of leading whitespace from l (a
// tab crossing column n leaves spaces for its remaining columns).
func stripIndent(l string, n int) string {
	col := 0
	for i := 0; i < len(l); i++ {
		if col >= n {
			return l[i:]
		}
		switch l[i] {
		case ' ':
			col++
		case '\t':
			next := col + 4 - col%4
			if next > n {
				return strings.Repeat(" ", next-n) + l[i+1:]
			}
			col = next
		default:
			return l[i:]
		}
	}
	return ""
}
