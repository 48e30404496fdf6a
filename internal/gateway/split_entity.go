package gateway

import (
	"strings"
	"unicode/utf16"
)

// An inline entity of one line of a reply, as the platforms' markups
// write them: inline code (`x`), bold and italic (*x*, _x_, **x**, __x__),
// strikethrough (~x~, ~~x~~), links ([text](url)) and Slack's <url|text>.
// Telegram's legacy Markdown, Discord's markdown and Slack's mrkdwn all
// use some of these; a piece cut inside one shows raw markers, and
// Telegram refuses it ("can't parse entities").
type entitySpan struct {
	start, end int    // byte offsets in the line, end exclusive
	marker     string // the delimiter that closes and reopens it; "" = a link, not cut
}

// lineEntities finds the entities of line, left to right, not nested
// (an entity's inside is not searched).
func lineEntities(line string) []entitySpan {
	var spans []entitySpan
	for i := 0; i < len(line); {
		c := line[i]
		if c == '\\' && i+1 < len(line) {
			i += 2
			continue
		}
		var sp entitySpan
		found := false
		switch c {
		case '`':
			m := "`"
			if strings.HasPrefix(line[i:], "```") {
				m = "```"
			}
			sp, found = closing(line, i, m)
		case '*', '_', '~':
			m := string(c)
			if i+1 < len(line) && line[i+1] == c {
				m += m
			}
			sp, found = closing(line, i, m)
		case '[':
			if j := strings.Index(line[i:], "]("); j > 0 {
				if k := strings.IndexByte(line[i+j:], ')'); k > 0 {
					sp, found = entitySpan{start: i, end: i + j + k + 1}, true
				}
			}
		case '<':
			if k := strings.IndexByte(line[i:], '>'); k > 1 && line[i+1] != ' ' && !strings.Contains(line[i+1:i+k], "<") {
				sp, found = entitySpan{start: i, end: i + k + 1}, true
			}
		}
		if !found {
			i++
			continue
		}
		spans = append(spans, sp)
		i = sp.end
	}
	return spans
}

// closing finds the entity opened by marker m at i: up to the next m.
func closing(line string, i int, m string) (entitySpan, bool) {
	k := strings.Index(line[i+len(m):], m)
	if k <= 0 {
		return entitySpan{}, false
	}
	return entitySpan{start: i, end: i + len(m) + k + len(m), marker: m}, true
}

// cutLine splits line so that head takes at most room UTF-16 units,
// never inside an entity: at the last space outside entities, else at an
// entity's boundary; an entity longer than room on its own is closed at
// the cut and reopened in tail (a link, which cannot be, is cut only when
// it alone exceeds room). In code (inCode) there are no entities: the
// cut is at the last space, else anywhere. Unless fresh (head starts a
// part), a line with no cut outside entities within room gives head ""
// (the caller starts a new part and cuts again).
func cutLine(line string, room int, inCode, fresh bool) (head, tail string) {
	limit := byteLimit(line, room)
	if limit >= len(line) {
		return line, ""
	}
	var spans []entitySpan
	if !inCode {
		spans = lineEntities(line)
	}
	inside := func(i int) *entitySpan {
		for k := range spans {
			if spans[k].start < i && i < spans[k].end {
				return &spans[k]
			}
		}
		return nil
	}
	// The last space outside entities, then the last boundary outside.
	for i := limit; i > 0; i-- {
		if line[i-1] == ' ' && inside(i) == nil {
			return line[:i], line[i:]
		}
	}
	for i := limit; i > 0; i-- {
		if isRuneStart(line, i) && inside(i) == nil {
			return line[:i], line[i:]
		}
	}
	if !fresh {
		return "", line
	}
	// An entity from the line's start is longer than room.
	sp := inside(limit)
	if sp == nil || sp.marker == "" {
		return line[:limit], line[limit:]
	}
	m := sp.marker
	limit = byteLimit(line, room-utf16Len(m))
	lo := sp.start + len(m) + 1 // the entity keeps some text in head
	for i := limit; i >= lo; i-- {
		if line[i] == ' ' {
			return line[:i] + m, m + line[i+1:]
		}
	}
	for i := limit; i >= lo; i-- {
		if isRuneStart(line, i) {
			return line[:i] + m, m + line[i:]
		}
	}
	return line[:limit], line[limit:]
}

// byteLimit is the largest rune boundary i with line[:i] at most room
// UTF-16 units (0 when room <= 0).
func byteLimit(line string, room int) int {
	used := 0
	for i, r := range line {
		if used+utf16.RuneLen(r) > room {
			return i
		}
		used += utf16.RuneLen(r)
	}
	return len(line)
}

func isRuneStart(s string, i int) bool { return i >= len(s) || s[i]&0xC0 != 0x80 }
