package prompt

import (
	"fmt"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Finding is one prompt-injection pattern that Scan blocked.
type Finding struct {
	// Kind is one of the Kind* constants.
	Kind string
	// Line is the 1-based line where it starts (for line threats, counted
	// after blocked comments were collapsed into their marker).
	Line int
	// Detail shows what matched, shortened; invisible characters are
	// written as U+XXXX and tag characters decoded to the text they hide.
	Detail string
}

// Finding kinds, after the threat classes of Hermes "security.md"
// (context-file injection scanning).
const (
	KindHiddenComment = "hidden-comment"    // instructions inside <!-- --> or a hidden HTML element
	KindInvisible     = "invisible-unicode" // zero-width, bidi override or tag characters
	KindOverride      = "override"          // "ignore previous instructions", "disregard your system prompt"
	KindSecrecy       = "secrecy"           // "do not tell the user"
	KindExfiltration  = "exfiltration"      // commands that send secrets out or print .env files
)

// markers are the visible replacements for blocked text, by kind.
func marker(kind string) string {
	switch kind {
	case KindHiddenComment:
		return "[BLOCKED: hidden instructions in HTML comment]"
	case KindInvisible:
		return "[BLOCKED: invisible unicode characters removed]"
	case KindOverride:
		return "[BLOCKED: instruction to override previous instructions]"
	case KindSecrecy:
		return "[BLOCKED: instruction to hide something from the user]"
	case KindExfiltration:
		return "[BLOCKED: command that could send secrets out]"
	}
	return "[BLOCKED]"
}

// linePatterns are the per-line threats; a matching line is replaced whole.
type linePattern struct {
	kind string
	re   *regexp.Regexp
}

// linePatterns compiles the patterns once, on first use.
var linePatterns = sync.OnceValue(compileLinePatterns)

func compileLinePatterns() []linePattern {
	return []linePattern{
		{KindOverride, regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override|bypass)\b[^\n]{0,40}\b(previous|prior|above|earlier|preceding|all|any|your|the)\b[^\n]{0,30}\b(instructions?|prompts?|rules|directions|guidelines|guardrails)\b`)},
		{KindOverride, regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override|reveal|print|repeat)\b[^\n]{0,20}\bsystem\s+prompt\b`)},
		{KindOverride, regexp.MustCompile(`(?i)\b(you are no longer|new system prompt|from now on,? you (are|will) (act|be|ignore))\b`)},
		{KindSecrecy, regexp.MustCompile(`(?i)\b(do not|don't|dont|never)\s+(tell|inform|mention|notify|alert|reveal|show|let)\b[^\n]{0,20}\b(the\s+)?user\b`)},
		{KindSecrecy, regexp.MustCompile(`(?i)\bwithout\s+(telling|informing|asking|notifying)\s+the\s+user\b`)},
		{KindSecrecy, regexp.MustCompile(`(?i)\bkeep\s+(this|it)\s+(secret|hidden)\s+from\s+the\s+user\b`)},
		{KindExfiltration, regexp.MustCompile(`(?i)\b(curl|wget|nc|ncat|netcat|http|invoke-webrequest)\b[^\n]*\$\{?[A-Z0-9_]*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)\b`)},
		{KindExfiltration, regexp.MustCompile(`(?i)\b(cat|less|more|head|tail|type|base64|xxd)\s+(?:[^\n|;&]*[\s/'"])?\.env(?:$|[\s'"` + "`" + `;|&)])`)},
		{KindExfiltration, regexp.MustCompile(`(?i)~/\.hermes/\.env\b|\$HERMES_HOME/\.env\b`)},
		{KindExfiltration, regexp.MustCompile(`(?i)\b(printenv|env|set)\b\s*\|\s*(curl|wget|nc|ncat|netcat)\b`)},
		{KindExfiltration, regexp.MustCompile(`(?i)\b(curl|wget)\b[^\n]*(-d|--data[a-z-]*|-F|--form|-T|--upload-file)\s*@?[^\s]*(\.env|\.netrc|\.ssh/|\.aws/|id_rsa|id_ed25519)`)},
	}
}

// htmlComment matches <!-- ... --> across lines.
var htmlComment = lazyregexp.New(`(?s)<!--(.*?)-->`)

// hiddenElement matches an HTML element styled to be invisible.
var hiddenElement = lazyregexp.New(`(?is)<(div|span|p|section)\b[^>]*style\s*=\s*["'][^"']*(display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0)[^"']*["'][^>]*>(.*?)</(div|span|p|section)>`)

// instructionLike matches text that addresses the model: commands, claims
// about its role, tool use. A comment without any of it ("<!-- TODO -->",
// "<!-- markdownlint-disable -->") is kept.
var instructionLike = lazyregexp.New(`(?i)\b(you|your|assistant|agent|model|ai|llm|ignore|disregard|instead|must|always|never|do not|don't|execute|run|curl|wget|send|upload|delete|rm|reveal|pretend|act as|instructions?|system prompt)\b`)

// Scan looks for prompt injection in text that goes into the system prompt
// (project context files, SOUL.md, memory entries, skills) and returns it
// with every blocked part replaced by a visible "[BLOCKED: ...]" marker,
// plus what was found. The classes follow Hermes "security.md": HTML
// comments and hidden elements that contain instructions (plain comments
// are kept), invisible unicode (zero-width, bidi overrides, tag
// characters; removed and the line marked), "ignore previous instructions"
// and system-prompt overrides, "do not tell the user", and commands that
// send secrets out (curl/wget with $…KEY/TOKEN, cat .env, ~/.hermes/.env).
// Clean input is returned unchanged with no findings.
func Scan(text string) (clean string, findings []Finding) {
	text, findings = scanInvisible(text)

	replaceBlock := func(re *regexp.Regexp, body func([]string) string) {
		text = replaceAllFunc(re, text, func(start int, m []string) string {
			inner := body(m)
			if !instructionLike().MatchString(inner) && !matchesAnyLine(inner) {
				return m[0]
			}
			findings = append(findings, Finding{Kind: KindHiddenComment, Line: lineOf(text, start), Detail: shorten(inner)})
			return marker(KindHiddenComment)
		})
	}
	replaceBlock(hiddenElement(), func(m []string) string { return m[3] })
	replaceBlock(htmlComment(), func(m []string) string { return m[1] })

	lines := strings.Split(text, "\n")
	patterns := linePatterns()
	for i, line := range lines {
		for _, p := range patterns {
			if loc := p.re.FindStringIndex(line); loc != nil {
				findings = append(findings, Finding{Kind: p.kind, Line: i + 1, Detail: shorten(line[loc[0]:loc[1]])})
				lines[i] = marker(p.kind)
				break
			}
		}
	}
	return strings.Join(lines, "\n"), sortFindings(findings)
}

func matchesAnyLine(s string) bool {
	for _, p := range linePatterns() {
		if p.re.MatchString(s) {
			return true
		}
	}
	return false
}

// isInvisible reports characters that render as nothing but can carry or
// reorder text: zero-width characters, word joiners, bidi embeddings,
// overrides and isolates, and Unicode tag characters.
func isInvisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, // zero-width space/joiners, LRM/RLM
		r >= 0x202A && r <= 0x202E,   // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064,   // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069,   // bidi isolates
		r == 0xFEFF,                  // zero-width no-break space (BOM)
		r == 0x180E,                  // Mongolian vowel separator
		r >= 0xE0000 && r <= 0xE007F: // tag characters
		return true
	}
	return false
}

// scanInvisible removes invisible characters (a leading BOM is dropped
// silently) and appends the marker to each line that had them.
func scanInvisible(text string) (string, []Finding) {
	text = strings.TrimPrefix(text, "\uFEFF")
	if !strings.ContainsFunc(text, isInvisible) {
		return text, nil
	}
	var findings []Finding
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if !strings.ContainsFunc(line, isInvisible) {
			continue
		}
		var kept, codes, hidden strings.Builder
		seen := map[rune]bool{}
		for _, r := range line {
			if !isInvisible(r) {
				kept.WriteRune(r)
				continue
			}
			if r >= 0xE0020 && r <= 0xE007E {
				hidden.WriteRune(r - 0xE0000) // tag characters mirror ASCII
			}
			if !seen[r] && len(seen) < 4 {
				seen[r] = true
				fmt.Fprintf(&codes, "U+%04X ", r)
			}
		}
		detail := strings.TrimSpace(codes.String())
		if hidden.Len() > 0 {
			detail += fmt.Sprintf(" hiding %q", shorten(hidden.String()))
		}
		findings = append(findings, Finding{Kind: KindInvisible, Line: i + 1, Detail: detail})
		lines[i] = kept.String() + " " + marker(KindInvisible)
	}
	return strings.Join(lines, "\n"), findings
}

// replaceAllFunc is regexp.ReplaceAllStringFunc with the match offset and
// submatches.
func replaceAllFunc(re *regexp.Regexp, s string, f func(start int, m []string) string) string {
	var b strings.Builder
	last := 0
	for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = s[loc[2*i]:loc[2*i+1]]
			}
		}
		b.WriteString(s[last:loc[0]])
		b.WriteString(f(loc[0], m))
		last = loc[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

func lineOf(s string, offset int) int { return strings.Count(s[:offset], "\n") + 1 }

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		s = string(r[:77]) + "..."
	}
	return s
}

// sortFindings orders findings by line (stable), so output is
// deterministic.
func sortFindings(f []Finding) []Finding {
	sort.SliceStable(f, func(i, j int) bool { return f[i].Line < f[j].Line })
	return f
}
