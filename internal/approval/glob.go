package approval

import (
	"regexp"
	"strings"
)

// globRegexp translates a shell-style glob into an anchored, case-insensitive
// regular expression with Python fnmatch semantics (Hermes matches
// approvals.deny with fnmatch): `*` matches any text including "/" and
// spaces, `?` one character, `[...]` a class (`[!...]` negated). An
// unterminated `[` is a literal.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?is)^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(glob) && (glob[j] == '!' || glob[j] == '^') {
				j++
			}
			if j < len(glob) && glob[j] == ']' {
				j++
			}
			for j < len(glob) && glob[j] != ']' {
				j++
			}
			if j >= len(glob) {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			class = strings.ReplaceAll(class, `\`, `\\`)
			b.WriteString("[" + class + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile("(?is)^" + regexp.QuoteMeta(glob) + "$")
	}
	return re
}
