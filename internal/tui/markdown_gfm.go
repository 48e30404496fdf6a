package tui

import (
	"bytes"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The two GitHub Flavored Markdown extensions the TUI renders, pipe
// tables and ~~strikethrough~~, after goldmark/extension's table.go and
// strikethrough.go (MIT, github.com/yuin/goldmark), without that
// package: it compiles linkify regexes at init, milliseconds on every
// start of the binary. The nodes are goldmark/extension/ast's.

// tableTransformer turns a paragraph whose second line is a delimiter
// row (| --- | :-: |) into a table; lines before the header row stay a
// paragraph. Cells are parsed as inline markdown afterwards.
type tableTransformer struct{}

// Transform implements parser.ParagraphTransformer.
func (tableTransformer) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := node.Lines()
	src := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		delim := lines.At(i)
		aligns := tableDelimiter(delim.Value(src))
		if aligns == nil {
			continue
		}
		header := tableRow(lines.At(i-1), aligns, true, src)
		if header == nil || header.ChildCount() != len(aligns) {
			return
		}
		table := east.NewTable()
		table.Alignments = aligns
		table.SetPos(node.Pos())
		table.AppendChild(table, east.NewTableHeader(header))
		for j := i + 1; j < lines.Len(); j++ {
			table.AppendChild(table, tableRow(lines.At(j), aligns, false, src))
		}
		node.Lines().SetSliced(0, i-1)
		node.Parent().InsertAfter(node.Parent(), node, table)
		if node.Lines().Len() == 0 {
			node.Parent().RemoveChild(node.Parent(), node)
		} else {
			last := node.Lines().At(i - 2)
			last.Stop-- // the paragraph's last newline
			node.Lines().Set(i-2, last)
		}
		return
	}
}

// tableRow splits a row at unescaped pipes into cells (missing cells
// are added empty, extra ones dropped except in the header).
func tableRow(seg text.Segment, aligns []east.Alignment, header bool, src []byte) *east.TableRow {
	seg = seg.TrimLeftSpace(src)
	seg = seg.TrimRightSpace(src)
	line := seg.Value(src)
	pos, limit := 0, len(line)
	if limit > 0 && line[0] == '|' {
		pos++
	}
	if limit > pos && line[limit-1] == '|' {
		limit--
	}
	row := east.NewTableRow(aligns)
	i := 0
	for ; pos < limit; i++ {
		align := east.AlignNone
		if i < len(aligns) {
			align = aligns[i]
		} else if !header {
			return row
		}
		end := pos
		for end < limit && (line[end] != '|' || end > 0 && line[end-1] == '\\') {
			end++
		}
		cell := east.NewTableCell()
		cell.Alignment = align
		cs := text.NewSegment(seg.Start+pos, seg.Start+end)
		cs = cs.TrimLeftSpace(src)
		cs = cs.TrimRightSpace(src)
		cell.Lines().Append(cs)
		row.AppendChild(row, cell)
		pos = end + 1
	}
	for ; i < len(aligns); i++ {
		cell := east.NewTableCell()
		cell.Alignment = aligns[i]
		row.AppendChild(row, cell)
	}
	return row
}

// tableDelimiter parses a delimiter row into column alignments, or nil
// when line is not one.
func tableDelimiter(line []byte) []east.Alignment {
	if w, _ := util.IndentWidth(line, 0); w > 3 {
		return nil
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || bytes.IndexByte(line, '-') < 0 {
		return nil
	}
	onlyDashes := true
	for _, b := range line {
		switch b {
		case '-':
		case '|', ':', ' ', '\t':
			onlyDashes = false
		default:
			return nil
		}
	}
	if onlyDashes { // a setext underline or a rule
		return nil
	}
	cols := bytes.Split(line, []byte{'|'})
	if len(bytes.TrimSpace(cols[0])) == 0 {
		cols = cols[1:]
	}
	if n := len(cols); n > 0 && len(bytes.TrimSpace(cols[n-1])) == 0 {
		cols = cols[:n-1]
	}
	var aligns []east.Alignment
	for _, c := range cols {
		c = bytes.TrimSpace(c)
		left, right := bytes.HasPrefix(c, []byte(":")), bytes.HasSuffix(c, []byte(":"))
		dashes := bytes.Trim(c, ":")
		if len(dashes) == 0 || len(bytes.Trim(dashes, "-")) != 0 {
			return nil
		}
		switch {
		case left && right:
			aligns = append(aligns, east.AlignCenter)
		case left:
			aligns = append(aligns, east.AlignLeft)
		case right:
			aligns = append(aligns, east.AlignRight)
		default:
			aligns = append(aligns, east.AlignNone)
		}
	}
	return aligns
}

// strikeParser parses ~text~ and ~~text~~ as strikethrough.
type strikeParser struct{}

// Trigger implements parser.InlineParser.
func (strikeParser) Trigger() []byte { return []byte{'~'} }

// Parse implements parser.InlineParser.
func (strikeParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	node := parser.ScanDelimiter(line, before, 1, strikeDelimiter{})
	if node == nil || node.OriginalLength > 2 || before == '~' {
		return nil
	}
	node.Segment = segment.WithStop(segment.Start + node.OriginalLength)
	block.Advance(node.OriginalLength)
	pc.PushDelimiter(node)
	return node
}

// CloseBlock implements parser.InlineParser.
func (strikeParser) CloseBlock(parent ast.Node, pc parser.Context) {}

// strikeDelimiter is the delimiter processor of ~.
type strikeDelimiter struct{}

func (strikeDelimiter) IsDelimiter(b byte) bool { return b == '~' }

func (strikeDelimiter) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char
}

func (strikeDelimiter) OnMatch(consumes int) ast.Node { return east.NewStrikethrough() }
