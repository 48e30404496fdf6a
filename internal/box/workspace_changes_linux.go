package box

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/protect"
	"golang.org/x/sys/unix"
)

// With terminal.box_workspace: overlay the box writes its workspace into
// ws-upper, the upper directory of an overlay on the host workspace, kept
// in the persistent layer. WorkspaceDiff lists those changes; ApplyWorkspace
// copies them onto the host. Both read the upper directory in overlayfs's
// format (kernel docs filesystems/overlayfs): a whiteout (a character
// device 0:0) is a deleted file, an "opaque" directory hides everything
// the host directory held.

// workspaceRecord names the file in a box's state dir holding the host
// workspace its copy-on-write layer belongs to.
const workspaceRecord = "workspace"

// ChangeKind is how a workspace path differs from the host.
type ChangeKind string

// Change kinds, as in git status --short.
const (
	ChangeAdded    ChangeKind = "A"
	ChangeModified ChangeKind = "M"
	ChangeDeleted  ChangeKind = "D"
)

// WorkspaceChange is one path of a copy-on-write workspace that differs
// from the host workspace.
type WorkspaceChange struct {
	Path  string // relative to the workspace, with '/' separators
	Kind  ChangeKind
	IsDir bool
	// Link is a symlink's target; External says it points outside the
	// workspace (an absolute path elsewhere, or ".." past its root).
	Link     string
	External bool
	// Protected is the terminal.protected_paths entry the path falls
	// under (or leads to, as .git does for .git/config); "" for none.
	Protected string
}

// ErrProtectedPaths is returned by ApplyWorkspace when the changes touch
// terminal.protected_paths and they were not allowed.
var ErrProtectedPaths = errors.New("the box's workspace changes touch terminal.protected_paths (files that make the host run code later)")

// ErrExternalSymlinks is returned by ApplyWorkspace when the changes hold
// symlinks pointing outside the workspace and they were not allowed.
var ErrExternalSymlinks = errors.New("the box's workspace changes hold symlinks pointing outside the workspace")

// linkLeaves reports whether symlink target, found at rel (relative to the
// workspace ws), points outside ws when resolved lexically.
func linkLeaves(ws, rel, target string) bool {
	abs := target
	if !filepath.IsAbs(target) {
		abs = filepath.Join(ws, filepath.Dir(rel), target)
	}
	abs = filepath.Clean(abs)
	return abs != ws && !strings.HasPrefix(abs, ws+string(filepath.Separator))
}

// recordWorkspace notes, for a persistent box with a copy-on-write
// workspace, which host workspace its layer holds changes of, and refuses
// to put that layer over another one.
func (m *Manager) recordWorkspace(dir, ws string) error {
	p := filepath.Join(dir, workspaceRecord)
	if old, err := os.ReadFile(p); err == nil && string(old) != ws {
		return fmt.Errorf("box %s keeps copy-on-write changes of workspace %s, not %s: run hermes from %s, or apply or drop them first (hermes box diff/apply/rm %s)",
			filepath.Base(dir), old, ws, old, filepath.Base(dir))
	}
	return os.WriteFile(p, []byte(ws), 0o600)
}

// WorkspaceDiff lists the changes the stopped persistent box task made to
// its copy-on-write workspace (terminal.box_workspace: overlay), sorted by
// path, and returns the host workspace they apply to.
func (m *Manager) WorkspaceDiff(task string) (string, []WorkspaceChange, error) {
	var ws string
	var changes []WorkspaceChange
	err := m.withWorkspaceUpper(task, func(workspace, upper string) error {
		ws = workspace
		var err error
		changes, err = diffWorkspace(upper, workspace)
		m.markProtected(workspace, upper, changes)
		return err
	})
	return ws, changes, err
}

// ApplyWorkspace copies the changes of WorkspaceDiff onto the host
// workspace: files are replaced atomically one by one (temp file in the
// same directory, fsync, rename), deleted paths are removed, and nothing
// is followed out of the workspace (os.Root; a host symlink where the box
// has a directory is replaced, not followed). New paths get the owner of
// the workspace directory, changed ones keep theirs. The copy-on-write
// layer is emptied afterwards, so the box sees the host tree again. It
// returns the workspace and the changes applied. Symlinks pointing
// outside the workspace are only applied with allowExternal; otherwise
// nothing is applied and the error wraps ErrExternalSymlinks (the changes
// are returned so the caller can list them). Changes to
// terminal.protected_paths are likewise only applied with allowProtected
// (ErrProtectedPaths). Without allowProtected, the workspace is then
// checked as a bind workspace is after each command (protect.Watch), and
// note says what was moved aside ("" for nothing).
func (m *Manager) ApplyWorkspace(task string, allowExternal, allowProtected bool) (ws string, changes []WorkspaceChange, note string, err error) {
	err = m.withWorkspaceUpper(task, func(workspace, upper string) error {
		ws = workspace
		var err error
		if changes, err = diffWorkspace(upper, workspace); err != nil {
			return err
		}
		m.markProtected(workspace, upper, changes)
		for _, c := range changes {
			if c.External && !allowExternal {
				return ErrExternalSymlinks
			}
		}
		for _, c := range changes {
			if c.Protected != "" && !allowProtected {
				return ErrProtectedPaths
			}
		}
		// What the marking above missed is caught the way a bind
		// workspace is after each command (unless the person allowed
		// protected changes: then they reviewed them).
		var watch *protect.Watch
		if !allowProtected {
			watch = protect.New(m.opts.Terminal.ProtectedPaths).Watch(workspace, false)
		}
		if err := applyWorkspace(upper, workspace, changes); err != nil {
			return err
		}
		note = watch.Check()
		for _, d := range []string{upper, filepath.Join(filepath.Dir(upper), "ws-work")} {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
		}
		return os.Mkdir(upper, 0o755)
	})
	return ws, changes, note, err
}

// withWorkspaceUpper calls fn with the host workspace of task's
// copy-on-write layer and that layer's upper directory, the box stopped.
func (m *Manager) withWorkspaceUpper(task string, fn func(workspace, upper string) error) error {
	if err := checkTaskID(task); err != nil {
		return err
	}
	rec, err := os.ReadFile(filepath.Join(m.StateDir(task), workspaceRecord))
	if err != nil {
		return fmt.Errorf("box %s has no copy-on-write workspace (it needs terminal.box_workspace: overlay and container_persistent: true, and one run): %w", task, fs.ErrNotExist)
	}
	ws := string(rec)
	if err := m.checkWorkspace(ws); err != nil {
		return err
	}
	return m.WithUpper(task, false, func(upper string) error {
		wsUpper := filepath.Join(filepath.Dir(upper), "ws-upper")
		if err := os.MkdirAll(wsUpper, 0o755); err != nil {
			return err
		}
		return fn(ws, wsUpper)
	})
}

// isWhiteout reports whether st is an overlayfs whiteout.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// isOpaque reports whether upper directory p is marked opaque.
func isOpaque(p string) bool {
	buf := make([]byte, 8)
	for _, name := range []string{initproc.OpaqueXattr(false), initproc.OpaqueXattr(true)} {
		if n, err := unix.Lgetxattr(p, name, buf); err == nil && string(buf[:n]) == "y" {
			return true
		}
	}
	return false
}

// diffWorkspace compares upper (a workspace overlay's upper dir) with the
// host workspace ws.
func diffWorkspace(upper, ws string) ([]WorkspaceChange, error) {
	host, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", ws, err)
	}
	defer host.Close()
	var out []WorkspaceChange
	err = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(upper, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		hst, herr := host.Lstat(rel)
		hostHas := herr == nil
		if rel == "." {
			if isOpaque(p) {
				out = append(out, deletedChildren(host, ".", upper, p)...)
			}
			return nil
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			if isWhiteout(&st) && hostHas {
				out = append(out, WorkspaceChange{Path: filepath.ToSlash(rel), Kind: ChangeDeleted, IsDir: hst.IsDir()})
			}
		case unix.S_IFDIR:
			if !hostHas || !hst.IsDir() {
				out = append(out, WorkspaceChange{Path: filepath.ToSlash(rel), Kind: ChangeAdded, IsDir: true})
				if hostHas {
					out = append(out, WorkspaceChange{Path: filepath.ToSlash(rel), Kind: ChangeDeleted})
				}
			} else if isOpaque(p) {
				out = append(out, deletedChildren(host, rel, upper, p)...)
			}
		case unix.S_IFREG:
			if !hostHas {
				out = append(out, WorkspaceChange{Path: filepath.ToSlash(rel), Kind: ChangeAdded})
			} else if !hst.Mode().IsRegular() || !sameFile(host, rel, p, hst) {
				out = append(out, WorkspaceChange{Path: filepath.ToSlash(rel), Kind: ChangeModified})
			}
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			c := WorkspaceChange{Path: filepath.ToSlash(rel), Kind: ChangeAdded, Link: target, External: linkLeaves(ws, rel, target)}
			if !hostHas {
				out = append(out, c)
			} else if ht, err := host.Readlink(rel); err != nil || ht != target {
				c.Kind = ChangeModified
				out = append(out, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the box's workspace changes: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// deletedChildren lists the host entries of directory rel that the opaque
// upper directory p does not have (they are gone in the box).
func deletedChildren(host *os.Root, rel, upper, p string) []WorkspaceChange {
	f, err := host.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	entries, _ := f.ReadDir(-1)
	var out []WorkspaceChange
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(p, e.Name())); err == nil {
			continue
		}
		out = append(out, WorkspaceChange{Path: filepath.ToSlash(filepath.Join(rel, e.Name())), Kind: ChangeDeleted, IsDir: e.IsDir()})
	}
	return out
}

// sameFile reports whether host file rel has the contents and mode of
// upper file p (a copy-up without a change).
func sameFile(host *os.Root, rel, p string, hst fs.FileInfo) bool {
	ust, err := os.Lstat(p)
	if err != nil || ust.Size() != hst.Size() || ust.Mode() != hst.Mode() {
		return false
	}
	a, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	hf, err := host.Open(rel)
	if err != nil {
		return false
	}
	defer hf.Close()
	b, err := io.ReadAll(io.LimitReader(hf, ust.Size()+1))
	return err == nil && bytes.Equal(a, b)
}

// applyWorkspace carries out changes (sorted by path, so parents come
// before their contents) on the host workspace ws from upper.
func applyWorkspace(upper, ws string, changes []WorkspaceChange) error {
	host, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", ws, err)
	}
	defer host.Close()
	owner, _ := host.Stat(".")
	// Deletions first: a path both deleted and added (a file replaced by
	// a directory) is removed before it is made again.
	for _, c := range changes {
		if c.Kind == ChangeDeleted {
			if err := host.RemoveAll(filepath.FromSlash(c.Path)); err != nil {
				return fmt.Errorf("apply: remove %s: %w", c.Path, err)
			}
		}
	}
	for _, c := range changes {
		if c.Kind == ChangeDeleted {
			continue
		}
		rel := filepath.FromSlash(c.Path)
		if err := applyOne(host, rel, filepath.Join(upper, rel), owner); err != nil {
			return fmt.Errorf("apply %s: %w", c.Path, err)
		}
	}
	return nil
}

// applyOne makes host path rel what upper path src is: a directory, a
// regular file or a symlink.
func applyOne(host *os.Root, rel, src string, wsInfo fs.FileInfo) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	old, oldErr := host.Lstat(rel)
	uid, gid := ownerOf(wsInfo)
	if oldErr == nil {
		uid, gid = ownerOf(old)
	}
	switch {
	case st.IsDir():
		if oldErr == nil && old.IsDir() {
			return nil
		}
		if oldErr == nil {
			if err := host.RemoveAll(rel); err != nil {
				return err
			}
		}
		if err := host.Mkdir(rel, st.Mode().Perm()); err != nil {
			return err
		}
		host.Chmod(rel, st.Mode().Perm())
		host.Lchown(rel, uid, gid)
		return nil
	case st.Mode().IsRegular(), st.Mode()&fs.ModeSymlink != 0:
		tmp := filepath.Join(filepath.Dir(rel), ".hermes-apply-"+filepath.Base(rel)+".tmp")
		host.RemoveAll(tmp)
		if err := copyIntoRoot(host, src, tmp, st); err != nil {
			host.Remove(tmp)
			return err
		}
		host.Lchown(tmp, uid, gid)
		if oldErr == nil && old.IsDir() {
			if err := host.RemoveAll(rel); err != nil {
				return err
			}
		}
		if err := host.Rename(tmp, rel); err != nil {
			host.Remove(tmp)
			return err
		}
		return nil
	}
	return nil // devices, FIFOs, sockets: not carried over
}

// copyIntoRoot writes upper file or symlink src to tmp inside host,
// synced to disk.
func copyIntoRoot(host *os.Root, src, tmp string, st fs.FileInfo) error {
	if st.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return host.Symlink(target, tmp)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := host.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(st.Mode().Perm())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func ownerOf(fi fs.FileInfo) (int, int) {
	if fi != nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return int(st.Uid), int(st.Gid)
		}
	}
	return -1, -1
}

// FormatChanges renders changes one per line, "A path", "M path", "D
// path", directories with a trailing '/', symlinks as "path -> target"
// marked "(outside the workspace)" when they point out of it, and paths
// under terminal.protected_paths marked "(protected: ...)". Names are
// printed with QuoteName, so a name cannot rewrite the terminal.
func FormatChanges(changes []WorkspaceChange) string {
	var b strings.Builder
	for _, c := range changes {
		p := QuoteName(c.Path)
		if c.IsDir {
			p += "/"
		}
		if c.Link != "" {
			p += " -> " + QuoteName(c.Link)
			if c.External {
				p += "  (symlink outside the workspace)"
			}
		}
		if c.Protected != "" {
			p += "  (protected: terminal.protected_paths " + c.Protected + ")"
		}
		fmt.Fprintf(&b, "%s %s\n", c.Kind, p)
	}
	return b.String()
}

// QuoteName returns name as is when it is printable UTF-8 without
// spaces at its ends or quote characters, and otherwise as a Go-quoted
// string ("a\x1b[0mb"), as git does with core.quotePath: control
// characters, escape sequences and invalid bytes are never printed raw.
func QuoteName(name string) string {
	if !utf8.ValidString(name) || strings.ContainsAny(name, "\"\\") || strings.TrimSpace(name) != name {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(name)
		}
	}
	return name
}
