package gateway

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// utf16Len is the length of s in UTF-16 code units (Telegram's unit).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// suffixReserve is room kept in each part for "\n(i/N)".
const suffixReserve = 12

// SplitMessage splits text into parts of at most limit UTF-16 units,
// preferring line breaks, never leaving a code fence open inside a part: a
// fence cut by a split is closed at the end of the part and reopened (with
// its language) at the start of the next. A line longer than a part is
// cut at a space and never inside an inline entity (link, bold, italic,
// strikethrough, inline code: see cutLine); an entity longer than a part
// is closed and reopened. With more than one part each ends with "(i/N)".
func SplitMessage(text string, limit int) []string {
	if utf16Len(text) <= limit {
		return []string{text}
	}
	budget := limit - suffixReserve
	var parts []string
	var cur strings.Builder
	curLen := 0
	fence := "" // the opening line of the fence open at this point, "" outside
	flush := func() {
		if curLen == 0 {
			return
		}
		s := strings.TrimRight(cur.String(), "\n")
		if fence != "" {
			s += "\n```"
		}
		parts = append(parts, s)
		cur.Reset()
		curLen = 0
		if fence != "" {
			cur.WriteString(fence + "\n")
			curLen = utf16Len(fence) + 1
		}
	}
	closeLen := func() int {
		if fence != "" {
			return 4 // "\n```"
		}
		return 0
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(line)
		isFence := strings.HasPrefix(trimmed, "```")
		// A line that does not fit even in an empty part is cut by runes.
		for utf16Len(line)+closeLen()+utf16Len(fence)+1 > budget {
			room := budget - curLen - closeLen()
			if room <= 0 {
				flush()
				continue
			}
			head, tail := cutLine(line, room, fence != "", curLen == 0)
			if head == "" { // no clean cut in what is left of this part
				flush()
				continue
			}
			cur.WriteString(head)
			curLen += utf16Len(head)
			flush()
			line = tail
		}
		n := utf16Len(line)
		next := fence
		if isFence {
			if fence == "" {
				next = strings.TrimRight(trimmed, "\n")
			} else {
				next = ""
			}
		}
		if curLen+n+closeLen() > budget {
			flush()
		}
		cur.WriteString(line)
		curLen += n
		fence = next
	}
	fence = "" // a fence left open by the text itself stays as written
	flush()
	if len(parts) > 1 {
		for i := range parts {
			parts[i] += fmt.Sprintf("\n(%d/%d)", i+1, len(parts))
		}
	}
	return parts
}
