package protect

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// UnapprovedKeys returns what in data, a git config file, is not known to
// be harmless: sorted "section.sub.key=value" lines for every setting
// outside the allowlist (approvedKey), keys lower-cased as git compares
// them, and "line N: …" for every line the parser does not fully
// understand; nil when there is nothing.
//
// The parser fails closed. It reads git-config(1)'s syntax strictly:
// `[section]`, `[section "sub"]` (a subsection without `\` or `"`) or the
// old `[section.sub]`, optionally followed by a key on the same line;
// `key`, `key = value` with quotes and the escapes \n \t \b \" \\; `#`
// and `;` comments. Anything else — a value continued on the next line
// with a trailing `\` (git joins the lines, so what looks like a new
// section is part of the value), an escape in a section header, a header
// or key git's grammar does not allow — is reported instead of guessed.
// The allowlist instead of a list of dangerous keys follows from the same
// rule: git grows new keys that run programs (gpg.ssh.defaultKeyCommand,
// trailer.*.command, url.*.insteadOf to ext::), a fresh clone's config
// uses few keys.
func UnapprovedKeys(data []byte) []string {
	var out []string
	parseConfig(data, func(k configKey) {
		if !approvedKey(k.section, k.sub, k.key, k.value) {
			v := k.name()
			if k.hasValue {
				v += "=" + k.raw
			}
			out = append(out, v)
		}
	}, func(line int, why, raw string) {
		out = append(out, fmt.Sprintf("line %d: %s: %s", line, why, quote(raw)))
	})
	sort.Strings(out)
	return out
}

// configKey is one setting parseConfig read: section and key lower-cased,
// the subsection as written (lower-cased in the old [section.sub] form),
// the value unquoted and unescaped, and raw as written after the "=".
type configKey struct {
	section, sub, key, value, raw string
	hasValue                      bool
}

func (k configKey) name() string {
	if k.sub != "" {
		return k.section + "." + k.sub + "." + k.key
	}
	return k.section + "." + k.key
}

// parseConfig reads data as UnapprovedKeys describes, calling key for
// each setting it understands and bad (1-based line, why, the line as
// written) for each line it does not; keys after a bad section header
// come with section "?".
func parseConfig(data []byte, key func(configKey), bad func(line int, why, raw string)) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	section, sub := "", ""
	for n, line := range strings.Split(string(data), "\n") {
		raw := strings.TrimSuffix(line, "\r")
		line = strings.TrimSpace(raw)
		if strings.HasPrefix(line, "[") {
			var rest string
			var ok bool
			section, sub, rest, ok = parseSectionHeader(line)
			if !ok {
				bad(n+1, "a section header hermes does not understand", raw)
				section, sub = "?", "" // later keys count as unapproved
				continue
			}
			line = rest
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "= \t#;"); i >= 0 {
			name, rest = line[:i], strings.TrimSpace(line[i:])
		}
		if !validKey(name) {
			bad(n+1, "a line hermes does not understand", raw)
			continue
		}
		k := configKey{section: section, sub: sub, key: strings.ToLower(name)}
		switch {
		case rest == "" || rest[0] == '#' || rest[0] == ';':
		case rest[0] == '=':
			v, ok := parseValue(rest[1:])
			if !ok {
				bad(n+1, "a value continued on the next line or with an escape hermes does not understand", raw)
				continue
			}
			k.value, k.hasValue, k.raw = v, true, strings.TrimSpace(rest[1:])
		default:
			bad(n+1, "a line hermes does not understand", raw)
			continue
		}
		if section == "" {
			bad(n+1, "a key outside any section", raw)
			continue
		}
		key(k)
	}
}

// parseSectionHeader parses a line starting with "[": `[core]`, `[filter
// "lfs"]` or the old `[filter.lfs]`, returning the lower-cased section, the
// subsection (lower-cased in the old form, as git does), what follows the
// "]" and whether the header is one hermes fully understands.
func parseSectionHeader(line string) (section, sub, rest string, ok bool) {
	h := line[1:]
	i := 0
	for i < len(h) && (isAlnum(h[i]) || h[i] == '-' || h[i] == '.') {
		i++
	}
	section, h = h[:i], h[i:]
	if section == "" {
		return "", "", "", false
	}
	switch {
	case strings.HasPrefix(h, "]"):
		rest = strings.TrimSpace(h[1:])
		if strings.HasPrefix(section, ".") || strings.HasSuffix(section, ".") {
			return "", "", "", false
		}
		if s, sb, found := strings.Cut(section, "."); found {
			return strings.ToLower(s), strings.ToLower(sb), rest, true
		}
		return strings.ToLower(section), "", rest, true
	case len(h) > 0 && (h[0] == ' ' || h[0] == '\t'):
		if strings.Contains(section, ".") {
			return "", "", "", false
		}
		h = strings.TrimLeft(h, " \t")
		if !strings.HasPrefix(h, `"`) {
			return "", "", "", false
		}
		end := strings.IndexAny(h[1:], `"\`)
		if end < 0 || h[1+end] != '"' || !strings.HasPrefix(h[2+end:], "]") {
			return "", "", "", false // an escape, or a quote or "]" where git's grammar does not put one
		}
		return strings.ToLower(section), h[1 : 1+end], strings.TrimSpace(h[3+end:]), true
	}
	return "", "", "", false
}

// parseValue reads a value as git does: quotes joined, a comment outside
// quotes ends it, the escapes \n \t \b \" \\. ok is false for a trailing
// `\` (a continued line), another escape, or an unclosed quote.
func parseValue(v string) (string, bool) {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) {
				return "", false
			}
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case '"', '\\':
				b.WriteByte(v[i])
			default:
				return "", false
			}
		case c == '"':
			quoted = !quoted
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String()), true
		default:
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", false
	}
	return strings.TrimSpace(b.String()), true
}

func validKey(k string) bool {
	if k == "" || !isAlpha(k[0]) {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isAlnum(k[i]) && k[i] != '-' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

// approvedKey reports whether section[.sub].key = value is on the short
// list of settings that `git init`, `git clone`, `git checkout -b` and
// `git config user.*` write and that make git run nothing:
//
//	core.repositoryformatversion, filemode, bare, logallrefupdates,
//	  ignorecase, precomposeunicode, symlinks
//	remote.<name>.url (harmlessURL), remote.<name>.fetch
//	branch.<name>.remote, merge, rebase
//	submodule.<name>.url (harmlessURL), submodule.<name>.active
//	user.name, user.email; init.defaultbranch
//	extensions.objectformat, extensions.refstorage
//
// Everything else (include.path, core.fsmonitor, url.*.insteadOf,
// remote.*.pushurl, protocol.*, gpg.*, trailer.*, filter.*, …) is not.
func approvedKey(section, sub, key, value string) bool {
	switch section + "." + key {
	case "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
		"core.ignorecase", "core.precomposeunicode", "core.symlinks":
		return sub == ""
	case "user.name", "user.email", "init.defaultbranch", "extensions.objectformat", "extensions.refstorage":
		return sub == ""
	case "remote.url", "submodule.url":
		return sub != "" && harmlessURL(value)
	case "remote.fetch", "branch.remote", "branch.merge", "branch.rebase", "submodule.active":
		return sub != ""
	}
	return false
}

// harmlessURL reports whether git fetching from u runs no program named in
// it: no `<transport>::` helper syntax (ext::, fd::, or any other
// git-remote-<transport>, gitremote-helpers(7)) and no leading "-" that an
// ssh or helper command line would read as an option.
func harmlessURL(u string) bool {
	if u == "" || u[0] == '-' {
		return false
	}
	if i := strings.Index(u, "::"); i >= 0 {
		scheme := u[:i]
		plain := scheme != ""
		for j := 0; j < len(scheme); j++ {
			plain = plain && (isAlnum(scheme[j]) || strings.IndexByte("+.-", scheme[j]) >= 0)
		}
		if plain {
			return false
		}
	}
	return true
}
