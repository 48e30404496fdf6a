// Package toolargs checks and repairs the JSON arguments of a model's tool
// call. Models (and the gateways in front of them) produce arguments that
// are almost JSON: a regex or Windows path with a lone backslash ("\d+",
// "C:\tmp"), a raw newline inside a string, or the whole object
// double-encoded as a JSON string. Those are repaired when the repair
// cannot change what the model meant; anything else (truncated JSON above
// all) is refused, so a tool never runs with guessed arguments.
//
// Repair also follows the schema the tool declared: a property whose
// schema type is array or object but whose value is a JSON string holding
// one gets the decoded value (as Hermes Agent's coerce_tool_args does), and
// a string holding a number or boolean where the schema wants one is
// converted.
package toolargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Result is the outcome of Repair: JSON is the object text to run the tool
// with; Notes say what was repaired (empty when the arguments were valid).
type Result struct {
	JSON  string
	Notes []string
}

// Note renders the repair notes as one sentence for a tool result, or "".
func (r Result) Note() string {
	if len(r.Notes) == 0 {
		return ""
	}
	return "[hermes: the arguments of this call were not valid JSON and were repaired before running it: " +
		strings.Join(r.Notes, "; ") + ". Send valid JSON arguments next time.]"
}

// Error is returned by Repair for arguments that cannot be repaired safely.
type Error struct {
	Reason string // what is wrong, for the model
}

func (e *Error) Error() string { return e.Reason }

// Repair returns raw as a JSON object text. Empty arguments are {}. It
// returns an *Error for arguments that are not a JSON object and cannot be
// repaired without guessing (truncated JSON, an array, prose).
func Repair(raw string) (Result, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return Result{JSON: "{}"}, nil
	}
	var res Result
	if !json.Valid([]byte(s)) {
		fixed, notes := fixStrings(s)
		if !json.Valid([]byte(fixed)) {
			return Result{}, &Error{Reason: describe(s)}
		}
		s, res.Notes = fixed, notes
	}
	// A JSON string holding the object (double-encoded arguments).
	for range 2 {
		if !strings.HasPrefix(s, `"`) {
			break
		}
		var inner string
		if json.Unmarshal([]byte(s), &inner) != nil {
			break
		}
		inner = strings.TrimSpace(inner)
		if !json.Valid([]byte(inner)) {
			if fixed, notes := fixStrings(inner); json.Valid([]byte(fixed)) {
				inner = fixed
				res.Notes = append(res.Notes, notes...)
			}
		}
		if !json.Valid([]byte(inner)) {
			break
		}
		s = inner
		res.Notes = append(res.Notes, "the arguments were a JSON string holding the object (double-encoded); the object inside was used")
	}
	if !strings.HasPrefix(s, "{") {
		return Result{}, &Error{Reason: "the arguments are not a JSON object"}
	}
	res.JSON = s
	return res, nil
}

// Valid reports whether raw is usable as the arguments of a call sent back
// to a provider: empty, or a JSON object.
func Valid(raw string) bool {
	s := strings.TrimSpace(raw)
	return s == "" || (strings.HasPrefix(s, "{") && json.Valid([]byte(s)))
}

// describe says why s could not be repaired.
func describe(s string) string {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	var syn *json.SyntaxError
	switch {
	case err != nil && strings.Contains(err.Error(), "unexpected end of JSON input"):
		return "the arguments JSON is truncated (it ends before the object is closed), maybe cut off at the output token limit"
	case err != nil && asSyntax(err, &syn):
		return fmt.Sprintf("the arguments are not valid JSON (%v at byte %d)", err, syn.Offset)
	case err != nil:
		return fmt.Sprintf("the arguments are not valid JSON (%v)", err)
	}
	return "the arguments are not a JSON object"
}

func asSyntax(err error, target **json.SyntaxError) bool {
	se, ok := err.(*json.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

// fixStrings repairs what is wrong inside JSON string literals only. In a
// string with a backslash that starts no valid escape ("\d+", "C:\Users"),
// the string was written raw, not JSON-escaped: every backslash in it is
// kept as a literal backslash ("C:\Users\tmp" stays C:\Users\tmp, not a
// tab), except before a quote, another backslash or \uXXXX. Raw control
// characters (newline, tab, CR) are escaped. Text outside strings is not
// touched, so a structural problem (a missing brace) stays an error. notes
// say which repairs were made.
func fixStrings(s string) (string, []string) {
	var b bytes.Buffer
	b.Grow(len(s) + 8)
	badEscape, rawControl := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		if c != '"' {
			continue
		}
		end := stringEnd(s, i+1)
		raw := hasInvalidEscape(s[i+1 : end])
		badEscape = badEscape || raw
		for j := i + 1; j < end; j++ {
			switch c := s[j]; {
			case c == '\\' && j+1 < end && (s[j+1] == '"' || s[j+1] == '\\' || (s[j+1] == 'u' && validEscape(s, j+1))):
				b.WriteByte(c)
				b.WriteByte(s[j+1])
				j++
			case c == '\\' && j+1 < end && !raw && validEscape(s, j+1):
				b.WriteByte(c)
				b.WriteByte(s[j+1])
				j++
			case c == '\\':
				b.WriteString(`\\`)
			case c == '\n':
				rawControl = true
				b.WriteString(`\n`)
			case c == '\r':
				rawControl = true
				b.WriteString(`\r`)
			case c == '\t':
				rawControl = true
				b.WriteString(`\t`)
			case c < 0x20:
				rawControl = true
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				b.WriteByte(c)
			}
		}
		if end < len(s) {
			b.WriteByte('"')
		}
		i = end
	}
	var notes []string
	if badEscape {
		notes = append(notes, `invalid escape sequences inside strings (like "\d" or "C:\Users") were kept as literal backslashes`)
	}
	if rawControl {
		notes = append(notes, "literal newlines or tabs inside strings were escaped")
	}
	return b.String(), notes
}

// stringEnd returns the index of the quote closing the string literal whose
// body starts at from (an escaped quote \" does not close it), or len(s).
func stringEnd(s string, from int) int {
	for j := from; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(s)
}

// hasInvalidEscape reports whether the string body holds a backslash that
// starts no JSON escape.
func hasInvalidEscape(body string) bool {
	for j := 0; j < len(body); j++ {
		if body[j] != '\\' {
			continue
		}
		if j+1 >= len(body) || !validEscape(body, j+1) {
			return true
		}
		j++
	}
	return false
}

// validEscape reports whether s[i] (the byte after a backslash) starts a
// JSON escape: one of "\/bfnrt, or u with four hex digits.
func validEscape(s string, i int) bool {
	switch s[i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if i+5 > len(s) {
			return false
		}
		_, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
		return err == nil
	}
	return false
}
