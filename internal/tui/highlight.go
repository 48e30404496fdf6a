package tui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// highlighter colours code blocks with a small scanner: keywords,
// types/builtins, strings, numbers, comments and function names for the
// languages models write most (Go, Python, JavaScript/TypeScript, shell,
// JSON, YAML, Rust, C/C++/Java, diff). Unknown languages are left plain.
// Keyword sets are built on first use of a language, per highlighter.
type highlighter struct {
	words map[string]map[string]tokenKind // language → word → kind
	sgr   [tokenKinds]string
}

// tokenKind is what a span of code is.
type tokenKind uint8

const (
	tokPlain tokenKind = iota
	tokKeyword
	tokType
	tokString
	tokNumber
	tokComment
	tokFunc
	tokVar
	tokAdded
	tokRemoved
	tokHunk
	tokenKinds
)

func newHighlighter() *highlighter {
	h := &highlighter{words: map[string]map[string]tokenKind{}}
	fg := func(c uint8) ansi.Style { return ansi.Style{}.Reset().ForegroundColor(ansi.IndexedColor(c)) }
	h.sgr = [tokenKinds]string{
		tokKeyword: fg(141).String(),              // purple
		tokType:    fg(117).String(),              // light blue
		tokString:  fg(150).String(),              // green
		tokNumber:  fg(215).String(),              // orange
		tokComment: fg(244).Italic(true).String(), // grey
		tokFunc:    fg(222).String(),              // yellow
		tokVar:     fg(117).String(),              // light blue
		tokAdded:   fg(114).String(),              // green
		tokRemoved: fg(203).String(),              // red
		tokHunk:    fg(75).Bold().String(),        // blue
	}
	return h
}

// langSpec describes a language's lexical shape.
type langSpec struct {
	name          string // canonical name, the key of highlighter.words
	keywords      string // space separated
	types         string // types, builtins and literals
	lineComment   []string
	blockComment  [2]string
	quotes        string // string delimiters
	tripleQuotes  bool   // Python """…"""
	hashNeedsGap  bool   // # starts a comment only at a line start or after a space (shell, YAML)
	dollarVars    bool   // $VAR, ${VAR}
	keyColon      bool   // key: (YAML) and "key": (JSON)
	rustLifetimes bool   // 'a is not a string
}

// langFor is the spec for a fence's info string ("go", "py", "bash"…),
// nil when unknown.
func langFor(name string) *langSpec {
	name = strings.ToLower(strings.TrimSpace(name))
	if i := strings.IndexAny(name, " {,"); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "go", "golang":
		return &langSpec{name: "go", lineComment: []string{"//"}, blockComment: [2]string{"/*", "*/"}, quotes: "\"'`",
			keywords: "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var",
			types:    "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any comparable true false nil iota append cap clear close copy delete len make max min new panic print println recover"}
	case "python", "py", "python3":
		return &langSpec{name: "python", lineComment: []string{"#"}, quotes: "\"'", tripleQuotes: true,
			keywords: "and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case",
			types:    "True False None self int str float bool list dict set tuple bytes object print len range open super isinstance type Exception ValueError"}
	case "js", "javascript", "jsx", "ts", "typescript", "tsx", "mjs", "cjs":
		return &langSpec{name: "js", lineComment: []string{"//"}, blockComment: [2]string{"/*", "*/"}, quotes: "\"'`",
			keywords: "async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while yield interface type enum implements private public protected readonly as",
			types:    "true false null undefined NaN Infinity string number boolean any unknown never void object Array Object Promise Map Set console"}
	case "sh", "bash", "shell", "zsh", "console", "shell-session", "shellsession":
		return &langSpec{name: "sh", lineComment: []string{"#"}, quotes: "\"'", hashNeedsGap: true, dollarVars: true,
			keywords: "if then else elif fi for in do done while until case esac function return export local readonly declare set unset shift exit break continue source alias",
			types:    "echo cd ls cat grep sed awk find xargs sudo apt apt-get go git make curl wget mkdir rm cp mv chmod chown printf test true false"}
	case "json", "jsonc", "json5":
		return &langSpec{name: "json", lineComment: []string{"//"}, quotes: "\"", keyColon: true, types: "true false null"}
	case "yaml", "yml":
		return &langSpec{name: "yaml", lineComment: []string{"#"}, quotes: "\"'", hashNeedsGap: true, keyColon: true,
			types: "true false null yes no on off ~"}
	case "rust", "rs":
		return &langSpec{name: "rust", lineComment: []string{"//"}, blockComment: [2]string{"/*", "*/"}, quotes: "\"'", rustLifetimes: true,
			keywords: "as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while",
			types:    "bool char str i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 String Vec Option Result Box Some None Ok Err true false"}
	case "c", "h", "cpp", "c++", "cc", "hpp", "cxx", "java", "cs", "csharp":
		return &langSpec{name: "c", lineComment: []string{"//"}, blockComment: [2]string{"/*", "*/"}, quotes: "\"'",
			keywords: "auto break case catch class const continue default delete do else enum extern for goto if inline namespace new private protected public register return sizeof static struct switch template this throw try typedef union using virtual volatile while import package extends implements final abstract interface",
			types:    "void char short int long float double signed unsigned bool size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t NULL nullptr true false String boolean byte"}
	case "diff", "patch":
		return &langSpec{name: "diff"}
	}
	return nil
}

// highlight returns code with SGR colours for lang (code unchanged when
// lang is unknown). Spans crossing lines are coloured again on each line.
func (h *highlighter) highlight(code, lang string) string {
	spec := langFor(lang)
	if spec == nil {
		return code
	}
	if spec.name == "diff" {
		return h.diff(code)
	}
	words := h.wordsOf(spec)
	var b strings.Builder
	b.Grow(len(code) * 2)
	emit := func(s string, k tokenKind) {
		if k == tokPlain {
			b.WriteString(s)
			return
		}
		for i, part := range strings.Split(s, "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			if part != "" {
				b.WriteString(h.sgr[k] + part + ansi.ResetStyle)
			}
		}
	}
	lineStart := true
	for i := 0; i < len(code); {
		n, k := scanToken(spec, words, code, i, lineStart)
		emit(code[i:i+n], k)
		c := code[i+n-1]
		lineStart = c == '\n' || (lineStart && (c == ' ' || c == '\t' || c == '-' && spec.name == "yaml"))
		i += n
	}
	return b.String()
}

// wordsOf is the word → kind table of spec, built once.
func (h *highlighter) wordsOf(spec *langSpec) map[string]tokenKind {
	if w, ok := h.words[spec.name]; ok {
		return w
	}
	w := map[string]tokenKind{}
	for _, t := range strings.Fields(spec.types) {
		w[t] = tokType
	}
	for _, k := range strings.Fields(spec.keywords) {
		w[k] = tokKeyword
	}
	h.words[spec.name] = w
	return w
}

// scanToken is the length and kind of the token at code[i:] (at least 1).
func scanToken(spec *langSpec, words map[string]tokenKind, code string, i int, lineStart bool) (int, tokenKind) {
	rest := code[i:]
	c := rest[0]
	if o, cl := spec.blockComment[0], spec.blockComment[1]; o != "" && strings.HasPrefix(rest, o) {
		if end := strings.Index(rest[len(o):], cl); end >= 0 {
			return len(o) + end + len(cl), tokComment
		}
		return len(rest), tokComment // unclosed (still streaming)
	}
	for _, lc := range spec.lineComment {
		if !strings.HasPrefix(rest, lc) {
			continue
		}
		if spec.hashNeedsGap && !lineStart && i > 0 && code[i-1] != ' ' && code[i-1] != '\t' {
			continue
		}
		return lineLen(rest), tokComment
	}
	if strings.IndexByte(spec.quotes, c) >= 0 {
		if n := scanString(spec, rest); n > 0 {
			if spec.keyColon && isKey(rest[n:]) {
				return n, tokVar
			}
			return n, tokString
		}
	}
	if spec.dollarVars && c == '$' && len(rest) > 1 {
		if rest[1] == '{' {
			if end := strings.IndexByte(rest, '}'); end > 0 {
				return end + 1, tokVar
			}
		}
		if n := identLen(rest[1:]); n > 0 {
			return 1 + n, tokVar
		}
	}
	if isDigit(c) && (i == 0 || !isIdent(code[i-1])) {
		n := 1
		for n < len(rest) && (isIdent(rest[n]) || rest[n] == '.' && n+1 < len(rest) && isDigit(rest[n+1])) {
			n++
		}
		return n, tokNumber
	}
	if isIdentStart(c) {
		n := identLen(rest)
		if spec.name == "sh" || spec.name == "yaml" {
			for n < len(rest) && (isIdent(rest[n]) || rest[n] == '-') {
				n++
			}
		}
		word := rest[:n]
		if spec.keyColon && lineStart && isKey(rest[n:]) {
			return n, tokVar
		}
		if k, ok := words[word]; ok {
			return n, k
		}
		if n < len(rest) && rest[n] == '(' && spec.name != "yaml" && spec.name != "json" {
			return n, tokFunc
		}
		return n, tokPlain
	}
	return 1, tokPlain
}

// scanString is the length of the string literal at the start of s
// (closing quote included; to the end when unclosed), 0 when it is not
// one (a Rust lifetime, a lone apostrophe in a shell word).
func scanString(spec *langSpec, s string) int {
	q := s[0]
	if spec.tripleQuotes && len(s) >= 3 && s[1] == q && s[2] == q {
		if end := strings.Index(s[3:], s[:3]); end >= 0 {
			return 3 + end + 3
		}
		return len(s)
	}
	if spec.rustLifetimes && q == '\'' {
		return rustChar(s)
	}
	for n := 1; n < len(s); n++ {
		switch s[n] {
		case '\\':
			if q != '\'' || spec.name != "sh" {
				n++
			}
		case q:
			return n + 1
		case '\n':
			if q != '`' && spec.name != "sh" {
				return n // unterminated: coloured to the end of the line
			}
		}
	}
	return len(s)
}

// rustChar is the length of the char literal at the start of s ('x',
// '\n', '\u{1F600}'), 0 for a lifetime ('a).
func rustChar(s string) int {
	if len(s) > 1 && s[1] == '\\' {
		if end := strings.IndexByte(s[2:min(len(s), 14)], '\''); end >= 0 {
			return 2 + end + 1
		}
		return 0
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	if size > 0 && 1+size < len(s) && s[1+size] == '\'' {
		return 1 + size + 1
	}
	return 0
}

// isKey is whether s starts with optional spaces and a colon (the rest
// of a YAML or JSON key).
func isKey(s string) bool {
	s = strings.TrimLeft(s, " \t")
	return strings.HasPrefix(s, ":") && (len(s) == 1 || s[1] == ' ' || s[1] == '\n' || s[1] == '\t')
}

// diff colours added, removed and hunk lines.
func (h *highlighter) diff(code string) string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		k := tokPlain
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
			k = tokKeyword
		case strings.HasPrefix(l, "@@"):
			k = tokHunk
		case strings.HasPrefix(l, "+"):
			k = tokAdded
		case strings.HasPrefix(l, "-"):
			k = tokRemoved
		}
		if k != tokPlain && l != "" {
			lines[i] = h.sgr[k] + l + ansi.ResetStyle
		}
	}
	return strings.Join(lines, "\n")
}

func lineLen(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

func identLen(s string) int {
	n := 0
	for n < len(s) && isIdent(s[n]) {
		n++
	}
	if n > 0 && isDigit(s[0]) {
		return 0
	}
	return n
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdent(c byte) bool      { return isIdentStart(c) || isDigit(c) }
