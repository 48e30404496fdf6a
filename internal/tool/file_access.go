package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/protect"
)

// FileToolOptions are the dependencies of read_file, write_file, patch and
// search_files.
type FileToolOptions struct {
	Backend backend.Backend
	// Home is the user's home directory and HermesHome is HERMES_HOME, in
	// the environment's view; they spell the paths writes may never touch.
	Home, HermesHome string
	// MaxReadChars is file_read_max_chars; 0 means 100,000.
	MaxReadChars int
	// MaxReadFileBytes is the largest file, in bytes, read_file loads;
	// 0 means DefaultMaxReadFileBytes.
	MaxReadFileBytes int64
	// Files, when set, is asked first to read and write text files (an
	// editor's buffers through ACP fs/*); it declines per call.
	Files FileAccess
	// Protected are terminal.protected_paths beneath the workdir: writes
	// there need Approvals (nil Approvals: refused).
	Protected protect.Set
	Approvals *approval.Service
}

// FileAccess reads and writes a session's text files another way than the
// backend: an ACP client's editor buffers (fs/read_text_file,
// fs/write_text_file), asking the person before an edit. Paths are
// absolute, in the environment's view.
type FileAccess interface {
	// ReadTextFile returns the file's text; handled is false to read it
	// through the backend instead (also when the file is not open there).
	ReadTextFile(ctx context.Context, sessionID, abs string) (text string, handled bool, err error)
	// WriteTextFile is called before tool (write_file, patch) replaces
	// oldText with newText in abs (oldText is "" for a new file). It
	// returns handled when it wrote the file, or an error to refuse the
	// write (its text is shown to the model); handled false and no error
	// lets the backend write.
	WriteTextFile(ctx context.Context, sessionID, tool, abs, oldText, newText string) (handled bool, err error)
}

// readText reads abs through o.Files when it handles it, else through env.
// HERMES_HOME's secrets are never asked of o.Files: an editor reads any
// file, while the backend refuses them (local.IsProtectedName).
func (o FileToolOptions) readText(ctx context.Context, env backend.Environment, sessionID, abs string) ([]byte, error) {
	if o.Files != nil && !o.hermesSecret(abs) {
		if text, handled, err := o.Files.ReadTextFile(ctx, sessionID, abs); handled && err == nil {
			return []byte(text), nil
		}
	}
	return env.ReadFile(ctx, abs)
}

// hermesSecret reports whether abs, as given or with its links resolved,
// is one of HERMES_HOME's protected entries or inside one.
func (o FileToolOptions) hermesSecret(abs string) bool {
	if o.HermesHome == "" {
		return false
	}
	in := func(p, home string) bool {
		rel, ok := strings.CutPrefix(path.Clean(p), path.Clean(home)+"/")
		return ok && local.IsProtectedName(strings.SplitN(rel, "/", 2)[0])
	}
	return in(abs, o.HermesHome) || in(resolveLinks(abs), resolveLinks(o.HermesHome))
}

// writeText writes data to abs through o.Files (which may refuse it) or env.
func (o FileToolOptions) writeText(ctx context.Context, env backend.Environment, sessionID, toolName, abs, oldText string, data []byte) error {
	if o.Files != nil {
		handled, err := o.Files.WriteTextFile(ctx, sessionID, toolName, abs, oldText, string(data))
		if err != nil || handled {
			return err
		}
	}
	return env.WriteFile(ctx, abs, data, 0o644)
}

// DefaultFileReadMaxChars is file_read_max_chars' default.
const DefaultFileReadMaxChars = 100_000

// DefaultMaxReadFileBytes (64 MiB) is the largest file read_file loads
// into memory; larger files are read in parts with the terminal.
const DefaultMaxReadFileBytes = 64 << 20

// openEnv opens the session's environment, or returns an error result.
func openEnv(ctx context.Context, b backend.Backend, sessionID, toolName string) (backend.Environment, *Result) {
	env, err := b.Open(ctx, sessionID)
	if err != nil {
		r := Errorf("%s: the %s backend is not available: %v", toolName, b.Kind(), err)
		return nil, &r
	}
	return env, nil
}

// absPath resolves p as the environment does: "~" from home, relative paths
// against the workdir.
func absPath(env backend.Environment, home, p string) string {
	if home != "" {
		if p == "~" {
			p = home
		} else if rest, ok := strings.CutPrefix(p, "~/"); ok {
			p = path.Join(home, rest)
		}
	}
	if !path.IsAbs(p) {
		p = path.Join(env.Workdir(), p)
	}
	return path.Clean(p)
}

// writeBlocked returns why writes to abs are refused, or "". The list is
// Hermes' always-blocked set ("security.md", file-write safety): ~/.ssh,
// ~/.aws, ~/.kube, ~/.gnupg, ~/.netrc, /etc/sudoers, HERMES_HOME/.env,
// auth.json, secrets/, mcp-tokens/, pairing/, and any .env / .env.* /
// .envrc file, the shell startup files (~/.bashrc, ~/.profile...), and
// /etc/passwd, /etc/shadow, /etc/systemd; and hermes' own state, which would let the model lift its
// own limits: HERMES_HOME/config.yaml (approvals.mode) and the session
// database HERMES_HOME/state.db with its -wal/-shm/-journal files.
func (o FileToolOptions) writeBlocked(abs string) string {
	under := func(dir string) bool { return abs == dir || strings.HasPrefix(abs, dir+"/") }
	if o.HermesHome != "" {
		hh := path.Clean(o.HermesHome)
		if path.Dir(abs) == hh {
			switch base := path.Base(abs); {
			case base == "config.yaml":
				return "it is hermes' configuration (config.yaml); only the user changes settings, with `hermes config set KEY VALUE`"
			case base == "state.db" || strings.HasPrefix(base, "state.db-"):
				return "it is hermes' session database (" + base + ")"
			case base == ".env" || strings.HasPrefix(base, ".env."):
				return "it holds hermes' API keys (" + base + "); only the user sets them, with `hermes config set KEY`"
			}
		}
		for _, d := range []string{"auth.json", "secrets", "mcp-tokens", "pairing"} {
			if under(path.Join(hh, d)) {
				return "it is hermes' own credential store (" + d + "); only the user changes it, with `hermes config set KEY`"
			}
		}
	}
	base := path.Base(abs)
	if base == ".env" || strings.HasPrefix(base, ".env.") || base == ".envrc" {
		return "it is an environment file that holds secrets (" + base + ")"
	}
	if abs == "/etc/sudoers" || strings.HasPrefix(abs, "/etc/sudoers.d/") {
		return "it controls sudo"
	}
	if abs == "/etc/passwd" || abs == "/etc/shadow" || under("/etc/systemd") {
		return "it controls the system's accounts or services"
	}
	if o.Home != "" {
		for _, d := range []string{".ssh", ".aws", ".azure", ".kube", ".gnupg", ".docker", ".config/gh"} {
			if under(path.Join(o.Home, d)) {
				return "it is in ~/" + d + ", which holds credentials"
			}
		}
		for _, f := range []string{".netrc", ".git-credentials", ".pgpass", ".npmrc", ".pypirc"} {
			if abs == path.Join(o.Home, f) {
				return "it holds credentials"
			}
		}
		for _, f := range startupFiles {
			if under(path.Join(o.Home, f)) {
				return "~/" + f + " runs commands the next time the user logs in, opens a shell or runs git, outside hermes' checks"
			}
		}
	}
	return ""
}

// startupFiles are the places under the home directory whose content runs
// later, unchecked: shell startup files, autostart and user services,
// git's global config (core.pager, aliases) and ~/.local/bin, which is
// early on PATH.
var startupFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
	".zshenv", ".zlogin", ".zlogout", ".config/fish", ".config/autostart", ".config/systemd", ".config/git", ".gitconfig",
	".local/bin", ".xinitrc", ".xprofile"}

// writeRefusal returns why a write to abs in env is refused, or "". On the
// local backend, which writes through symbolic links, the path is also
// checked with its links resolved, so a link in the workdir pointing at
// HERMES_HOME/config.yaml is refused like the file itself.
func (o FileToolOptions) writeRefusal(env backend.Environment, abs string) string {
	if why := o.writeBlocked(abs); why != "" {
		return why
	}
	if o.Backend == nil || o.Backend.Kind() != "local" {
		return ""
	}
	resolved := resolveLinks(abs)
	if resolved == "" {
		return ""
	}
	hostView := o
	if o.Home != "" {
		hostView.Home = resolveLinks(o.Home)
	}
	if o.HermesHome != "" {
		hostView.HermesHome = resolveLinks(o.HermesHome)
	}
	return hostView.writeBlocked(resolved)
}

// protectedEntry returns the terminal.protected_paths entry abs falls
// under (relative to the environment's workdir; on the local backend also
// with links resolved), or "".
func (o FileToolOptions) protectedEntry(env backend.Environment, abs string) string {
	if o.Protected.Empty() {
		return ""
	}
	if e, ok := o.Protected.MatchAbs(env.Workdir(), abs, false); ok {
		return e
	}
	if o.Backend != nil && o.Backend.Kind() == "local" {
		if e, ok := o.Protected.MatchAbs(resolveLinks(env.Workdir()), resolveLinks(abs), false); ok {
			return e
		}
	}
	return ""
}

// protectedWrite asks for approval before toolName writes a protected
// path (issue 23: .git/config, .git/hooks/... make the host run code
// later). It returns nil when the write may go ahead, else the result
// refusing it.
func (o FileToolOptions) protectedWrite(ctx context.Context, env backend.Environment, sessionID, toolName, p, abs string) *Result {
	entry := o.protectedEntry(env, abs)
	if entry == "" {
		return nil
	}
	if o.Approvals == nil {
		r := Errorf("%s: refused to write %s: %s", toolName, p, o.Protected.EntryHint(entry))
		return &r
	}
	d, err := o.Approvals.Request(ctx, approval.Request{SessionID: sessionID, Tool: toolName, Action: "write protected path", Path: abs,
		Reason: "terminal.protected_paths entry " + entry + ": the host may run what is written here (git, shells, editors)"})
	if err == nil && d.Allowed {
		return nil
	}
	why := o.Protected.EntryHint(entry)
	if err != nil {
		why = err.Error() + "; " + why
	} else if d.Reason != "" {
		why = d.Reason + "; " + why
	}
	r := Errorf("%s: refused to write %s: %s", toolName, p, why)
	return &r
}

// protectedWriteAccepter is an environment whose backend checks the
// workspace after each command and moves aside protected paths that
// appeared since it started (the local backend, protect.Watch).
type protectedWriteAccepter interface {
	AcceptProtectedWrite(abs string)
}

// acceptProtected tells the environment that abs, a protected path, was
// just written with the user's approval, so its later check leaves it.
func (o FileToolOptions) acceptProtected(env backend.Environment, abs string) {
	if a, ok := env.(protectedWriteAccepter); ok && o.protectedEntry(env, abs) != "" {
		a.AcceptProtectedWrite(abs)
	}
}

// writeFailed is the error result of a failed write; a protected path
// (read-only in a box) gets the reason and the fix.
func (o FileToolOptions) writeFailed(env backend.Environment, toolName, p, abs string, err error) Result {
	if entry := o.protectedEntry(env, abs); entry != "" {
		return Errorf("%s: could not write %s: %v (%s)", toolName, p, err, o.Protected.EntryHint(entry))
	}
	return Errorf("%s: could not write %s: %v", toolName, p, err)
}

// resolveLinks returns p with every symbolic link resolved; when p does
// not exist, its nearest existing ancestor is resolved and the rest
// appended. It returns p cleaned when nothing can be resolved.
func resolveLinks(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for dir := p; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// notFound builds the error for a missing file, suggesting similar names
// in its directory.
func notFound(ctx context.Context, env backend.Environment, toolName, p, abs string) Result {
	msg := fmt.Sprintf("%s: file not found: %s", toolName, p)
	dir := path.Dir(abs)
	entries, err := env.ReadDir(ctx, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Errorf("%s (directory %s does not exist either)", msg, dir)
		}
		return Errorf("%s", msg)
	}
	if s := similarNames(path.Base(abs), entries); len(s) > 0 {
		for i := range s {
			s[i] = path.Join(dir, s[i])
		}
		return Errorf("%s. Did you mean: %s", msg, strings.Join(s, ", "))
	}
	return Errorf("%s (use search_files with target \"files\" to find it)", msg)
}

// similarNames returns up to 5 entry names close to name: same name in
// another case, a shared prefix or infix, or an edit distance of at most a
// third of the name.
func similarNames(name string, entries []backend.FileInfo) []string {
	type scored struct {
		name  string
		score int
	}
	lower := strings.ToLower(name)
	stem := strings.TrimSuffix(lower, path.Ext(lower))
	var found []scored
	for _, e := range entries {
		n := strings.ToLower(e.Name)
		d := levenshtein.ComputeDistance(lower, n)
		switch {
		case n == lower:
			found = append(found, scored{e.Name, 0})
		case stem != "" && (strings.HasPrefix(n, stem) || strings.Contains(n, stem)):
			found = append(found, scored{e.Name, 1 + d})
		case d <= max(1, len(lower)/3):
			found = append(found, scored{e.Name, 1 + d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].score < found[j].score })
	out := []string{}
	for i := 0; i < len(found) && i < 5; i++ {
		out = append(out, found[i].name)
	}
	return out
}
