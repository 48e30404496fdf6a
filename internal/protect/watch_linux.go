package protect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Refused is the suffix of what Watch.Check moves aside:
// sub/.git/config becomes sub/.git/config.refused-by-hermes.
const Refused = ".refused-by-hermes"

// A read-only mount covers only a protected path that exists when it is
// made (MountReadOnly): a box's at its start, a guarded local command's at
// the command's. Two kinds of files escape it, and a Watch catches them
// on the host after each command instead:
//
//   - Repositories below the workspace. The user's `git status` at the top
//     recurses into every populated submodule (a nested repository added
//     as a gitlink) and reads its config; a nested .git can also be a
//     gitfile or symlink naming a directory elsewhere, and any git
//     directory's commondir names where its config and hooks live.
//   - Protected entries that did not exist yet: .envrc, .vscode/,
//     .mcp.json, … created by a command.
//
// Check moves aside (renames, beneath the workspace, never following
// links) what is new since the Watch began: a git config file setting a
// key outside a short allowlist or a line hermes cannot parse (UnapprovedKeys), an executable hook other
// than the *.sample ones git init writes, a commondir, a gitfile or .git
// symlink pointing out of the workspace or at a directory holding the
// above, and a protected entry that was missing at the start. So `git
// init` and `git commit` keep working in an empty workspace (a fresh
// repository's config runs nothing), and a cloned repository without such
// settings is left alone; what the user's own repositories already held
// at the start stays.
//
// The scan visits at most scanMaxDirs directories, scanMaxDepth deep, and
// does not descend into .git directories (it reads their config, hooks
// and commondir, walks their modules/, and checks the git directories
// gitfiles name). A directory is a git directory when git would take it
// for one: HEAD with objects and refs (directories, links or anything
// else access(2) passes), or HEAD with a commondir. When it stops
// at a bound, the gitlinks the index of each repository found records are
// followed wherever they lie, chained without a depth bound (at most
// scanMaxGitlinks; a changed config beyond that is moved aside unchecked),
// and the person and the model are told once.
const (
	scanMaxDirs     = 50000
	scanMaxDepth    = 32
	scanMaxHooks    = 1000
	scanMaxGitlinks = 10000
	maxConfigSize   = 1 << 20
	maxGitfileSize  = 4096
	maxIndexSize    = 64 << 20
	maxRenameTrials = 20
)

// Watch holds what a workspace held when a backend started (see above).
// A nil Watch checks nothing. It is safe for concurrent use.
type Watch struct {
	set       Set
	workspace string

	mu      sync.Mutex
	known   map[string]bool // findings present at the start, or accepted since
	present map[string]bool // protected entries (outside .git) present at the start
	// The top-level .git's config, hooks and commondir that existed at
	// the start are read-only mounts; the user may still change them on
	// the host, so they are not checked.
	topExisted map[string]bool
	// bound holds the files the top-level repository points to
	// (Set.Pointed) that were read-only mounts from the start: like
	// topExisted, not checked.
	bound  map[string]bool
	warned bool
	// maxGitlinks bounds the gitlinks a cut-off scan follows; 0 means
	// scanMaxGitlinks (tests lower it).
	maxGitlinks int
	warn        io.Writer // the person's side of a cut-off scan; nil = os.Stderr
}

// finding is one thing to move aside: its workspace-relative path, why,
// the protected entry it falls under, and its identity (path and content
// summary) for the comparison with the start.
type finding struct {
	path, why, entry, id string
}

// Watch returns a Watch of the workspace as it is now, or nil when the Set
// is empty or workspace is "". mounted says the existing entries are
// read-only mounts for the commands (MountReadOnly): then the top-level
// .git's config, hooks and commondir that exist now are not checked
// later (the user may change them on the host); without the mounts they
// are compared with what they hold now, like every other repository.
func (s Set) Watch(workspace string, mounted bool) *Watch {
	if s.Empty() || workspace == "" {
		return nil
	}
	w := &Watch{set: s, workspace: workspace, known: map[string]bool{}, present: map[string]bool{}, topExisted: map[string]bool{}}
	root, err := openRoot(workspace)
	if err != nil {
		return w
	}
	defer unix.Close(root)
	for _, e := range s.entries {
		if !isGitEntry(e.rel) && exists(root, e.rel) {
			w.present[e.rel] = true
		}
	}
	if st, err := lstatBeneath(root, ".git"); mounted && err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		for _, name := range []string{"config", "hooks", "commondir"} {
			w.topExisted[name] = exists(root, ".git/"+name)
		}
	}
	if mounted {
		w.bound = s.boundPointed(workspace, root)
	}
	found, _ := w.scan(root)
	for _, f := range found {
		w.known[f.id] = true
	}
	return w
}

func isGitEntry(rel string) bool { return rel == ".git" || strings.HasPrefix(rel, ".git/") }

// Check moves aside what is new since the Watch began (see above) and
// returns the note for the command's output: what moved where, why, and
// how to change it; "" when nothing moved.
func (w *Watch) Check() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	root, err := openRoot(w.workspace)
	if err != nil {
		return ""
	}
	defer unix.Close(root)
	found, incomplete := w.scan(root)
	for _, e := range w.set.entries {
		if isGitEntry(e.rel) || w.present[e.rel] || !exists(root, e.rel) {
			continue
		}
		name := e.rel
		if e.dir {
			name += "/"
		}
		found = append(found, finding{path: e.rel, entry: name, why: "a protected path that did not exist when the sandbox started"})
	}
	var moved, failed, entries []string
	for _, f := range found {
		if f.id != "" && w.known[f.id] {
			continue
		}
		to, err := moveAside(root, f.path)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s): %v", printable(f.path), f.why, err))
		} else {
			moved = append(moved, fmt.Sprintf("%s (%s) to %s", printable(f.path), f.why, printable(to)))
		}
		if !strings.Contains("\x00"+strings.Join(entries, "\x00")+"\x00", "\x00"+f.entry+"\x00") {
			entries = append(entries, f.entry)
		}
	}
	var b strings.Builder
	if len(moved) > 0 {
		b.WriteString("hermes: the command left files in the workspace that would make the host run code later (the user's git, shell or editor), so hermes moved " +
			strings.Join(moved, "; ") + ". Only the user can move them back, on the host. ")
	}
	if len(failed) > 0 {
		b.WriteString("hermes: the command left files that make the host run code later and hermes could not move them aside: " +
			strings.Join(failed, "; ") + "; the user must remove them on the host before running git there. ")
	}
	if b.Len() > 0 {
		b.WriteString(w.set.EntryHint(entries...))
	}
	if incomplete != "" && !w.warned {
		w.warned = true
		msg := cutOffNote(incomplete)
		out := w.warn
		if out == nil {
			out = os.Stderr
		}
		fmt.Fprintln(out, msg)
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(msg)
	}
	return b.String()
}

// printable returns p as it is when it holds only printable UTF-8 and no
// quote, else Go-quoted (\x1b, \a, …): the note goes to the person's
// terminal, where a raw escape sequence in a name a command chose would
// clear the screen or rewrite the warning.
func printable(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) || r == '"' }) {
		return p
	}
	return strconv.Quote(p)
}

// CheckForPerson runs Check for a command whose output nobody reads as
// the command's (one started in the background, a terminal session that
// has ended) and writes the note to the person's side (WarnTo).
func (w *Watch) CheckForPerson() {
	if note := w.Check(); note != "" {
		w.mu.Lock()
		out := w.warn
		w.mu.Unlock()
		if out == nil {
			out = os.Stderr
		}
		fmt.Fprintln(out, note)
	}
}

// WarnTo sends the one notice that the workspace is too large or deep to
// check in full to out (the person's terminal or log) as well as into the
// command's output; by default it goes to os.Stderr.
func (w *Watch) WarnTo(out io.Writer) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.warn = out
	w.mu.Unlock()
}

// cutOffNote says why the scan stopped ("depth" or "count") and what that
// leaves unchecked.
func cutOffNote(reason string) string {
	if reason == "depth" {
		return fmt.Sprintf("hermes: the workspace has directories more than %d levels deep; repositories below that depth were not checked for settings that run code: check them before running git there on the host", scanMaxDepth)
	}
	return fmt.Sprintf("hermes: the workspace has more than %d directories; repositories below the first %d were not checked for settings that run code: check them before running git there on the host", scanMaxDirs, scanMaxDirs)
}

// Accept records the current state of rel (workspace-relative, slash-
// separated), written by hermes on the host after the user approved it
// (a file tool's write to a protected path), so that Check leaves it.
func (w *Watch) Accept(rel string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rel = path.Clean(rel)
	if e, ok := w.set.match(rel, false, false); ok && !isGitEntry(strings.TrimSuffix(e, "/")) {
		w.present[strings.TrimSuffix(e, "/")] = true
	}
	root, err := openRoot(w.workspace)
	if err != nil {
		return
	}
	defer unix.Close(root)
	found, _ := w.scan(root)
	for _, f := range found {
		if f.path == rel || strings.HasPrefix(f.path, rel+"/") {
			w.known[f.id] = true
		}
	}
}

// moveAside renames rel (beneath root, no links followed on the way) to
// rel+Refused, or rel+Refused+".N" when that exists, and returns the new
// name.
func moveAside(root int, rel string) (string, error) {
	dir, base := path.Split(rel)
	parent := root
	if dir != "" {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		fd, err := unix.Openat2(root, strings.TrimSuffix(dir, "/"), &how)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		parent = fd
	}
	for i := 1; i <= maxRenameTrials; i++ {
		to := base + Refused
		if i > 1 {
			to += "." + strconv.Itoa(i)
		}
		err := unix.Renameat2(parent, base, parent, to, unix.RENAME_NOREPLACE)
		if err == nil {
			return dir + to, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", err
		}
	}
	return "", errors.New("too many earlier copies moved aside")
}

func openRoot(workspace string) (int, error) {
	return unix.Open(workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// lstatBeneath stats rel beneath root without following its last element.
func lstatBeneath(root int, rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	dir, base := path.Split(rel)
	parent := root
	if dir != "" {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		fd, err := unix.Openat2(root, strings.TrimSuffix(dir, "/"), &how)
		if err != nil {
			return st, err
		}
		defer unix.Close(fd)
		parent = fd
	}
	return st, unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW)
}

func exists(root int, rel string) bool {
	_, err := lstatBeneath(root, rel)
	return err == nil
}

// sortFindings orders findings by path, for stable notes.
func sortFindings(f []finding) {
	sort.Slice(f, func(i, j int) bool { return f[i].path < f[j].path })
}
