// Package protect names the workspace files that make the host run code
// later (terminal.protected_paths, issue 23): git's config and hooks, shell
// rc files, editor and MCP settings, hermes's own project directory. A box
// (bind workspace) and the guarded local commands may read them but never
// write them; the file tools ask before writing them and the approval
// classifier flags commands that target them.
//
// The default list follows Anthropic's sandbox-runtime, which keeps
// .gitconfig, .gitmodules, the shell rc files, .mcp.json, .vscode/, .idea/,
// .git/hooks/ and .git/config write-protected inside writable roots, plus
// .git/info/ (info/attributes, info/exclude), .envrc (direnv) and .hermes/,
// and the project files of other tools that run commands from them:
// Claude Code's .claude/ (hooks), Zed's .zed/ and Helix's .helix/ (language
// servers, tasks), .devcontainer/ (postCreateCommand), Cargo's config
// (build.rustc-wrapper, aliases), mise's mise.toml (tasks, hooks, env
// scripts), Yarn's .yarnrc.yml (yarnPath), .npmrc (script-shell, node
// options), Neovim's .nvim.lua and vi's .exrc (exrc), pre-commit's
// .pre-commit-config.yaml (repo: local hooks), and for a workspace that is
// the home directory the remaining login files (.zshenv, .zlogin,
// .bash_login), .config/git/ (git's XDG config), .config/fish/ and .ssh/
// (ProxyCommand). asdf's .tool-versions only names versions and is left out.
package protect

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Defaults returns the default terminal.protected_paths: workspace-relative
// paths; a trailing "/" names a directory and everything below it.
func Defaults() []string {
	return []string{
		".git/config", ".git/hooks/", ".git/info/", ".git/commondir", ".git/worktrees/", ".gitmodules", ".gitconfig",
		".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile",
		".envrc", ".vscode/", ".idea/", ".mcp.json", ".hermes/",
		".claude/", ".zed/", ".helix/", ".devcontainer/", ".cargo/config.toml", ".cargo/config",
		"mise.toml", ".mise.toml", ".yarnrc.yml", ".npmrc", ".nvim.lua", ".exrc", ".pre-commit-config.yaml",
		".zshenv", ".zlogin", ".bash_login", ".config/git/", ".config/fish/", ".ssh/",
	}
}

// Validate reports whether entry is a usable terminal.protected_paths
// entry: a non-empty relative path without "." or ".." elements, "//" or
// control characters. The error says what is wrong in words a config
// check can print after the key.
func Validate(entry string) error {
	trimmed := strings.TrimSuffix(entry, "/")
	switch {
	case trimmed == "":
		return fmt.Errorf("%q is empty; write a path relative to the workspace such as .git/config or .vscode/", entry)
	case strings.HasPrefix(entry, "/") || strings.HasPrefix(entry, "~"):
		return fmt.Errorf("%q is not relative to the workspace; write it as .git/config or .vscode/", entry)
	case strings.ContainsFunc(entry, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%q contains a control character", entry)
	case path.Clean(trimmed) != trimmed || trimmed == "." || strings.HasPrefix(trimmed, "../") || trimmed == "..":
		return fmt.Errorf("%q is not a clean relative path (no ., .. or //); write it as .git/config or .vscode/", entry)
	}
	return nil
}

// Set is a list of protected workspace-relative paths, as configured.
// The zero Set protects nothing.
type Set struct {
	entries []entry
}

type entry struct {
	rel string // cleaned, without the trailing "/"
	dir bool   // the entry ended in "/": the whole tree
}

// New returns the Set of entries, skipping those Validate refuses (the
// config check reports them).
func New(entries []string) Set {
	var s Set
	for _, e := range entries {
		if Validate(e) != nil {
			continue
		}
		s.entries = append(s.entries, entry{rel: strings.TrimSuffix(e, "/"), dir: strings.HasSuffix(e, "/")})
	}
	return s
}

// Empty reports whether the Set protects nothing.
func (s Set) Empty() bool { return len(s.entries) == 0 }

// Paths returns the entries as configured-style strings (directories with
// a trailing "/").
func (s Set) Paths() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.rel
		if e.dir {
			out[i] += "/"
		}
	}
	return out
}

// Rel returns the entries without their trailing "/", for callers that
// mount or stat them beneath a root.
func (s Set) Rel() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.rel
	}
	return out
}

// Match reports whether rel, a slash-separated path relative to the
// workspace, is protected: it is an entry, lies below a directory entry,
// or is an ancestor directory of an entry whose removal or renaming would
// take the entry with it (such as .git for .git/config) when ancestors is
// true. Entries under .git/ hold at every depth too: a nested repository's
// sub/.git/config runs its core.fsmonitor on the user's `git status` at
// the top as well. It returns the entry that matched, as configured.
func (s Set) Match(rel string, ancestors bool) (string, bool) {
	rel = strings.TrimSuffix(path.Clean(filepath.ToSlash(rel)), "/")
	if rel == "." || rel == "" || strings.HasPrefix(rel, "../") || rel == ".." {
		return "", false
	}
	if e, ok := s.match(rel, ancestors, false); ok {
		return e, true
	}
	for i := strings.Index(rel, "/.git"); i >= 0; {
		if nested := rel[i+1:]; nested == ".git" || strings.HasPrefix(nested, ".git/") {
			if e, ok := s.match(nested, ancestors, true); ok {
				return e, true
			}
		}
		j := strings.Index(rel[i+1:], "/.git")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return "", false
}

// match is Match of a cleaned rel against the entries (only those under
// .git/ when gitOnly).
func (s Set) match(rel string, ancestors, gitOnly bool) (string, bool) {
	for _, e := range s.entries {
		if gitOnly && !strings.HasPrefix(e.rel, ".git/") {
			continue
		}
		name := e.rel
		if e.dir {
			name += "/"
		}
		switch {
		case rel == e.rel:
			return name, true
		case e.dir && strings.HasPrefix(rel, e.rel+"/"):
			return name, true
		case ancestors && strings.HasPrefix(e.rel, rel+"/"):
			return name, true
		}
	}
	return "", false
}

// MatchAbs is Match for an absolute path p (cleaned, symlinks already
// resolved by the caller when it matters) under the workspace root ws.
// Paths outside ws are not protected.
func (s Set) MatchAbs(ws, p string, ancestors bool) (string, bool) {
	rel, err := filepath.Rel(ws, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return s.Match(rel, ancestors)
}
