package protect

import (
	"bytes"
	"sort"
	"strings"
)

// CodeRunningKeys returns the settings in data, a git config file, that
// make git run a program or read further config (git-config(1)): sorted
// "section.sub.key=value" lines, keys lower-cased as git compares them,
// nil when there are none.
//
// The parser is deliberately coarse and errs towards reporting: every
// line is read on its own (a value continued with a trailing backslash
// is read again as a key line, which can only add findings), a section
// header may be followed by a key on the same line as git allows, and a
// line git would reject makes git refuse the whole file, so it runs
// nothing either way. Values are kept as written.
func CodeRunningKeys(data []byte) []string {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var out []string
	section, sub := "", ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section, sub = parseSectionHeader(line[1:end])
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, value := line, ""
		if i := strings.IndexByte(line, '='); i >= 0 {
			key, value = strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		}
		key = strings.ToLower(key)
		if codeRunning(section, sub, key, unquote(value)) {
			name := section + "."
			if sub != "" {
				name += sub + "."
			}
			out = append(out, name+key+"="+value)
		}
	}
	sort.Strings(out)
	return out
}

// parseSectionHeader splits `core`, `filter "lfs"` or the old `filter.lfs`
// into the lower-cased section and the subsection.
func parseSectionHeader(h string) (section, sub string) {
	h = strings.TrimSpace(h)
	if i := strings.IndexAny(h, " \t\""); i >= 0 {
		section, sub = h[:i], strings.TrimSpace(h[i:])
		sub = strings.ReplaceAll(strings.Trim(sub, `"`), `\"`, `"`)
		return strings.ToLower(section), sub
	}
	if i := strings.IndexByte(h, '.'); i >= 0 {
		return strings.ToLower(h[:i]), strings.ToLower(h[i+1:])
	}
	return strings.ToLower(h), ""
}

// unquote drops double quotes and a trailing comment, roughly as git reads
// a value; only used to decide whether a value is harmless.
func unquote(v string) string {
	if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.Contains(v[:i], `"`) {
		v = v[:i]
	}
	return strings.TrimSpace(strings.ReplaceAll(v, `"`, ""))
}

// codeRunning reports whether section[.sub].key names a program git runs
// or a file it reads further config from. The list follows git-config(1):
// hooks and monitors (core.fsmonitor, core.hooksPath, hook.*), programs
// for paging, editing, credentials, transport and signing, the drivers of
// filters, diffs and merges, include.path and includeIf.*.path,
// core.worktree and `!` aliases.
func codeRunning(section, sub, key, value string) bool {
	switch section + "." + key {
	case "core.fsmonitor":
		return !isFalse(value) && !isTrue(value) // true runs git's own daemon
	case "core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.gitproxy",
		"core.alternaterefscommand", "core.worktree", "sequence.editor", "diff.external", "interactive.difffilter",
		"credential.helper", "gpg.program", "include.path", "includeif.path",
		"sendemail.smtpserver", "sendemail.sendmailcmd", "sendemail.tocmd", "sendemail.cccmd",
		"instaweb.httpd", "web.browser", "uploadpack.packobjectshook", "remote.vcs":
		return true
	case "submodule.update":
		return strings.HasPrefix(value, "!")
	}
	switch section {
	case "alias":
		return strings.HasPrefix(value, "!")
	case "pager", "hook":
		return true
	case "filter":
		return key == "clean" || key == "smudge" || key == "process"
	case "diff":
		return key == "command" || key == "textconv"
	case "merge":
		return key == "driver"
	case "mergetool", "difftool", "guitool":
		return key == "cmd" || key == "path"
	case "credential", "gpg":
		return key == "helper" || key == "program"
	case "remote":
		return key == "uploadpack" || key == "receivepack" || key == "vcs"
	case "browser", "man":
		return key == "cmd" || key == "path"
	case "tar":
		return key == "command"
	case "includeif", "include":
		return key == "path"
	}
	return false
}

func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0", "":
		return true
	}
	return false
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}
