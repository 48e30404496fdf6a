package protect

import (
	"path"
	"path/filepath"
	"strings"
)

// A repository's own config can point git at other files: core.hooksPath
// names the directory git runs hooks from (.githooks, husky's .husky/_),
// include.path and includeIf.<condition>.path name more config files, and a
// hook may be a symbolic link to a script (tools/pre-commit). When those
// lie in the workspace, a command that writes them makes the user's next
// `git commit` or `git status` run its code as surely as writing
// .git/config would. They are protected paths of that workspace: read-only
// binds for a box or a guarded command (Set.Pointed), and checked after
// each command like the repositories' own config and hooks.

// maxIncludeDepth is how many include levels are followed (git stops at
// 10, config.c MAX_INCLUDE_DEPTH).
const maxIncludeDepth = 10

// configPointers returns what git config data points to: the last
// core.hooksPath and every include.path / includeIf.*.path (whatever the
// condition: failing closed), as written.
func configPointers(data []byte) (hooksPath string, includes []string) {
	parseConfig(data, func(k configKey) {
		switch {
		case !k.hasValue:
		case k.section == "core" && k.sub == "" && k.key == "hookspath":
			hooksPath = k.value
		case (k.section == "include" && k.sub == "" || k.section == "includeif" && k.sub != "") && k.key == "path":
			includes = append(includes, k.value)
		}
	}, func(int, string, string) {})
	return hooksPath, includes
}

// workspaceRel resolves p, a path git reads relative to base (a
// slash-separated directory relative to the workspace ws), to a clean
// path relative to ws; ok is false for a path outside the workspace, one
// starting with "~" (the user's home) or "".
func workspaceRel(ws, base, p string) (string, bool) {
	if p == "" || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "%(prefix)") {
		return "", false
	}
	var rel string
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(ws, p)
		if err != nil {
			return "", false
		}
		rel = filepath.ToSlash(r)
	} else {
		rel = path.Join(base, filepath.ToSlash(p))
	}
	rel = path.Clean(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || Validate(rel) != nil {
		return "", false
	}
	return rel, true
}

// With returns the Set with extra entries (Validate'd like New's) added.
func (s Set) With(extra []string) Set {
	out := Set{entries: append([]entry(nil), s.entries...)}
	out.entries = append(out.entries, New(extra).entries...)
	return out
}
