package protect

import (
	"encoding/json"
	"strings"
)

// Errno texts of a write into a protected path: EROFS for a write, EBUSY
// for a rename or removal of a mount point (see MountReadOnly).
var failureTexts = []string{"Read-only file system", "Device or resource busy"}

// FailureNote explains a command that failed (exitCode != 0) in a way
// that looks like a write into a protected path: its output names an
// entry or has the kernel's EROFS/EBUSY text. The note names the entries
// the output mentions (all of them when it mentions none, only an errno)
// and gives a copyable `hermes config set terminal.protected_paths '[...]'`
// without them, and '[]' to turn protection off. "" when the Set is empty,
// the command succeeded or nothing points at a protected path.
func (s Set) FailureNote(exitCode int, output string) string {
	if s.Empty() || exitCode == 0 {
		return ""
	}
	errno := false
	for _, t := range failureTexts {
		errno = errno || strings.Contains(output, t)
	}
	named := s.mentioned(output)
	if len(named) == 0 && !errno {
		return ""
	}
	if len(named) == 0 {
		return "this looks like a write into a protected path, which fails here on purpose: terminal.protected_paths (" +
			strings.Join(s.Paths(), ", ") + ") keeps " + why + " read-only; edit the file on the host yourself, " +
			"or turn protection off with: hermes config set terminal.protected_paths '[]'"
	}
	return "writes to " + strings.Join(named, ", ") + " fail here on purpose: " + s.EntryHint(named...)
}

// EntryHint says why writes to the protected entries named (as
// configured, e.g. ".git/config") are refused and how to change it: edit
// them on the host, or the copyable `hermes config set
// terminal.protected_paths '[...]'` without them, or '[]'.
func (s Set) EntryHint(named ...string) string {
	list := strings.Join(named, ", ")
	return "terminal.protected_paths keeps " + why + " read-only; edit " + list + " on the host yourself, or stop protecting " +
		pronoun(named) + " with: hermes config set terminal.protected_paths " + shellQuote(s.without(named)) +
		" (or '[]' to turn protection off)"
}

const why = "files that make the host run code later (git config and hooks, shell rc files, editor and MCP settings, .hermes/)"

func pronoun(named []string) string {
	if len(named) == 1 {
		return "it"
	}
	return "them"
}

// mentioned returns the entries (as configured) whose path appears in
// output at the start of a path element: ".profile" does not match
// ".bash_profile" or "x.profile".
func (s Set) mentioned(output string) []string {
	var out []string
	for i, e := range s.entries {
		if containsPath(output, e.rel) {
			out = append(out, s.Paths()[i])
		}
	}
	return out
}

func containsPath(output, rel string) bool {
	for off := 0; ; {
		i := strings.Index(output[off:], rel)
		if i < 0 {
			return false
		}
		i += off
		if i == 0 || !isNameByte(output[i-1]) {
			return true
		}
		off = i + 1
	}
}

func isNameByte(c byte) bool {
	return c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// without returns the configured entries minus drop, as the JSON list
// `hermes config set` parses (a YAML flow sequence).
func (s Set) without(drop []string) string {
	keep := []string{}
	for _, p := range s.Paths() {
		if !strings.Contains("\x00"+strings.Join(drop, "\x00")+"\x00", "\x00"+p+"\x00") {
			keep = append(keep, p)
		}
	}
	b, _ := json.Marshal(keep)
	return string(b)
}

// shellQuote quotes v for a POSIX shell with single quotes.
func shellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
