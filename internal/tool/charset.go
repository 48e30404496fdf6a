package tool

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/htmlindex"

	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// decodeOutput turns a command's output bytes into text without losing
// information: valid UTF-8 is kept; otherwise, when charset (the
// command's locale charset: GBK, Shift_JIS, ISO-8859-1 …, as named in
// LANG/LC_ALL, see commandCharset) is known and not UTF-8, the bytes are
// decoded from it (WHATWG encoding names and labels, as browsers do);
// else each byte that is not part of valid UTF-8 is written as \xNN, so
// GBK "你好" (c4 e3 ba c3) reads \xc4\xe3\xba\xc3 instead of one U+FFFD.
func decodeOutput(raw []byte, charset string) string {
	if utf8.Valid(raw) {
		return string(raw)
	}
	if charset != "" && !isUTF8Name(charset) {
		if enc, err := htmlindex.Get(charset); err == nil {
			if out, err := enc.NewDecoder().Bytes(raw); err == nil {
				return string(out)
			}
		}
	}
	return escapeInvalid(raw)
}

// escapeInvalid returns raw with each byte that is not part of a valid
// UTF-8 sequence written as \xNN (lower-case hex).
func escapeInvalid(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw) + len(raw)/4)
	for len(raw) > 0 {
		r, size := utf8.DecodeRune(raw)
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, raw[0])
		} else {
			b.Write(raw[:size])
		}
		raw = raw[size:]
	}
	return b.String()
}

func isUTF8Name(charset string) bool {
	c := strings.ToLower(strings.ReplaceAll(charset, "-", ""))
	return c == "utf8"
}

// localeAssignment matches a locale variable set by a shell command for
// itself, at the start of a command of the line ("LC_ALL=zh_CN.GBK cmd",
// "env LANG=ja_JP.SJIS cmd", "export LANG=x.GBK; …", after other
// assignments), capturing the variable and the charset after the dot.
var localeAssignment = lazyregexp.New(`(?:^|[;&|(\n])\s*(?:export\s+|env\s+)?(?:[A-Za-z_]\w*=\S*\s+)*(LC_ALL|LC_CTYPE|LANG)=["']?[A-Za-z_]*\.([A-Za-z0-9_-]+)`)

// commandCharset is the charset a command's output is written in: the
// charset of the locale the command sets for itself (LC_ALL, then
// LC_CTYPE, then LANG, as setlocale(3) ranks them), else fallback (the
// charset of the environment's own locale; "" = UTF-8 or unknown).
func commandCharset(command, fallback string) string {
	found := map[string]string{}
	for _, m := range localeAssignment().FindAllStringSubmatch(command, -1) {
		found[m[1]] = m[2]
	}
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if c := found[v]; c != "" {
			return c
		}
	}
	return fallback
}

// LocaleCharset returns the charset of the locale an environment's
// variables select (LC_ALL, then LC_CTYPE, then LANG; "zh_CN.GBK" →
// "GBK"), or "" when none names one. getenv is os.Getenv or a map lookup.
func LocaleCharset(getenv func(string) string) string {
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		val := getenv(v)
		if val == "" {
			continue
		}
		if _, cs, ok := strings.Cut(val, "."); ok {
			cs, _, _ = strings.Cut(cs, "@")
			return cs
		}
		return ""
	}
	return ""
}
