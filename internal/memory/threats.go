package memory

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxScanChars bounds the text ScanThreats looks at (runes); longer text is
// scanned up to this point only, as in Hermes ("threat_patterns.py").
const MaxScanChars = 65536

// Threat is one finding of ScanThreats.
type Threat struct {
	// ID names the pattern, e.g. "prompt_injection", "exfil_curl" or
	// "invisible_unicode_U+200B" (the ids of Hermes "threat_patterns.py").
	ID string
	// Match is the text that matched a pattern, at most 80 bytes with
	// newlines shown as spaces ("" for invisible characters).
	Match string
}

// filler allows up to eight words between the key words of a pattern.
const filler = `(?:\w+\s+){0,8}`

// secretVar is an environment variable reference whose name ends in a
// secret-ish suffix ($OPENAI_API_KEY, ${GH_TOKEN}).
const secretVar = `\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)S?\b`

type threatPattern struct {
	re *regexp.Regexp
	id string
}

// threatPatterns is the "strict" scope of Hermes' shared threat-pattern
// library (tools/threat_patterns.py): the scope used for memory and skill
// writes, where a block is resolvable by the writer. Go's RE2 has no
// look-behind and caps repeats at 1000, so a few patterns are adapted.
// They compile on first use: compiling them at process start cost every
// hermes command about 2 ms.
var threatPatterns = sync.OnceValue(func() []threatPattern { return compileThreatPatterns(threatSources) })

var threatSources = [][2]string{
	{`(?i)ignore\s+` + filler + `(previous|all|above|prior)\s+` + filler + `instructions`, "prompt_injection"},
	{`(?i)system\s+prompt\s+override`, "sys_prompt_override"},
	{`(?i)disregard\s+` + filler + `(your|all|any)\s+` + filler + `(instructions|rules|guidelines)`, "disregard_rules"},
	{`(?i)act\s+as\s+(if|though)\s+` + filler + `you\s+` + filler + `(have\s+no|don't\s+have)\s+` + filler + `(restrictions|limits|rules)`, "bypass_restrictions"},
	{`(?i)<!--[^>]{0,512}\b(?:ignore|override|system|secret|hidden)\b[^>]{0,512}-->`, "html_comment_injection"},
	{`(?i)<\s*div\s+style\s*=\s*["'][^>]*display\s*:\s*none`, "hidden_div"},
	{`(?i)do\s+not\s+` + filler + `tell\s+` + filler + `the\s+user`, "deception_hide"},
	{`(?i)you\s+are\s+` + filler + `now\s+(?:a|an|the)\s+`, "role_hijack"},
	{`(?i)output\s+` + filler + `(system|initial)\s+prompt`, "leak_system_prompt"},
	{`(?i)curl\s+[^\n]*` + secretVar, "exfil_curl"},
	{`(?i)wget\s+[^\n]*` + secretVar, "exfil_wget"},
	{`(?i)cat\s+[^\n]*(\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc)`, "read_secrets"},
	{`(?i)(send|post|upload|transmit)\s+[^\n]*\s+(to|at)\s+https?://`, "send_to_url"},
	{`(?i)(include|output|print|share)\s+` + filler + `(conversation|chat\s+history|previous\s+messages|full\s+context|entire\s+context)`, "context_exfil"},
	{`(?i)authorized_keys`, "ssh_backdoor"},
	{`(?i)\$HOME/\.ssh|~/\.ssh`, "ssh_access"},
	{`(?i)\$HOME/\.hermes/\.env|~/\.hermes/\.env`, "hermes_env"},
	{`(?i)(update|modify|edit|write|change|append|add\s+to)\s+[^\n]*(?:AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)`, "agent_config_mod"},
	{`(?i)(update|modify|edit|write|change|append|add\s+to)\s+[^\n]*\.hermes/(config\.yaml|SOUL\.md)`, "hermes_config_mod"},
	{`(?i)(?:api[_-]?key|token|secret|password)\s*[=:]\s*["'][A-Za-z0-9+/=_-]{20,}`, "hardcoded_secret"},
}

func compileThreatPatterns(src [][2]string) []threatPattern {
	out := make([]threatPattern, len(src))
	for i, p := range src {
		out[i] = threatPattern{re: regexp.MustCompile(p[0]), id: p[1]}
	}
	return out
}

// invisibleRunes are zero-width and bidirectional-control code points used
// to hide instructions (Hermes INVISIBLE_CHARS).
const invisibleRunes = "\u200b\u200c\u200d\u2060\u2062\u2063\u2064\ufeff" +
	"\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

// ScanThreats reports prompt-injection, exfiltration and invisible-unicode
// findings in text, in a stable order (invisible characters first, by first
// occurrence, then patterns in table order). Full-width ASCII look-alikes
// (ｃｕｒｌ) are folded to ASCII before the pattern match, the part of Hermes'
// NFKC step that matters for these patterns. It copies the "strict" scope of
// Hermes' tools/threat_patterns.py.
func ScanThreats(text string) []Threat {
	if r := []rune(text); len(r) > MaxScanChars {
		text = string(r[:MaxScanChars])
	}
	var out []Threat
	seen := map[rune]bool{}
	for _, r := range text {
		if strings.ContainsRune(invisibleRunes, r) && !seen[r] {
			seen[r] = true
			out = append(out, Threat{ID: fmt.Sprintf("invisible_unicode_U+%04X", r)})
		}
	}
	normalised := strings.Map(foldFullWidth, text)
	for _, p := range threatPatterns() {
		if loc := p.re.FindStringIndex(normalised); loc != nil {
			out = append(out, Threat{ID: p.id, Match: shortMatch(normalised[loc[0]:loc[1]])})
		}
	}
	return out
}

// threatReason is the refusal message for the first finding, or "" when
// text is clean.
func threatReason(text string) string {
	found := ScanThreats(text)
	if len(found) == 0 {
		return ""
	}
	id := found[0].ID
	if cp, ok := strings.CutPrefix(id, "invisible_unicode_"); ok {
		return fmt.Sprintf("Blocked: content contains invisible unicode character %s (possible injection). Remove it and retry.", cp)
	}
	return fmt.Sprintf("Blocked: content matches threat pattern %q. Memory is injected into the system prompt and must not contain injection or exfiltration payloads.", id)
}

// shortMatch is m on one line, cut to 80 bytes at a rune boundary.
func shortMatch(m string) string {
	m = strings.Join(strings.Fields(m), " ")
	if len(m) <= 80 {
		return m
	}
	cut := 77
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "..."
}

// foldFullWidth maps the full-width forms U+FF01..U+FF5E to ASCII.
func foldFullWidth(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E {
		return r - 0xFEE0
	}
	return r
}
