package protect

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mounted is what MountReadOnly did: the entries now read-only (as
// configured, directories with "/") and those that did not exist, which a
// command may still create (see MountReadOnly).
type Mounted struct {
	ReadOnly []string
	Missing  []string
}

// MountReadOnly makes the Set's entries read-only beneath a workspace in
// the calling thread's mount namespace, which must be a private one of its
// own (a box's, or one unshared for a command): each existing entry gets a
// read-only bind mount over itself (recursive, so a directory's whole tree
// is covered), after every directory between the workspace and the entry
// (.git for .git/config) got a writable bind over itself. Those binds are
// what keep the entries in place: the kernel refuses to rename or remove a
// mount point (EBUSY), so `mv .git x && mkdir .git` cannot swap the
// protected files for new ones, and rename(2) onto .git/config (git config,
// which writes config.lock and renames it) fails the same way. Writes get
// EROFS. This is the mechanism of Anthropic's sandbox-runtime (bubblewrap
// --ro-bind over each path): Landlock cannot refuse a path below a tree it
// allows.
//
// reopen returns a new O_PATH descriptor of the workspace root each time it
// is called (the caller may bind the root itself first; a descriptor
// opened before that would reach the covered directory). Paths resolve
// beneath the root, following symlinks that stay inside it; an entry whose
// resolution leaves the workspace is skipped.
//
// An entry that does not exist cannot carry a mount; the kernel offers no
// way to forbid one name in a directory a command may otherwise write.
// Directory entries under .git/ whose parent exists (.git/hooks/,
// .git/info/ in a repository: directories git itself lays out) are
// therefore created empty first and then mounted; other missing entries
// (.config/git/ in a home directory) are returned in Missing, for the
// caller to report.
func (s Set) MountReadOnly(reopen func() (int, error)) (Mounted, error) {
	var m Mounted
	if s.Empty() {
		return m, nil
	}
	root, err := reopen()
	if err != nil {
		return m, fmt.Errorf("open the workspace: %w", err)
	}
	defer unix.Close(root)
	pinned := map[string]bool{}
	entries := slices.Clone(s.entries)
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	for _, e := range entries {
		name := e.rel
		if e.dir {
			name += "/"
		}
		if err := pinAncestors(root, e.rel, pinned); err != nil {
			return m, err
		}
		fd, err := openBeneath(root, e.rel)
		if errors.Is(err, unix.ENOENT) && e.dir && isGitEntry(e.rel) {
			fd, err = createDir(root, e.rel)
		}
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) {
			m.Missing = append(m.Missing, name)
			continue
		}
		if err != nil {
			return m, fmt.Errorf("protect %s: %w", name, err)
		}
		err = bindReadOnly(root, fd, e.rel)
		unix.Close(fd)
		if err != nil {
			return m, fmt.Errorf("protect %s: %w", name, err)
		}
		pinned[e.rel] = true
		m.ReadOnly = append(m.ReadOnly, name)
	}
	return m, nil
}

// pinAncestors binds every existing directory between the root and rel
// over itself (once), so that it becomes a mount point nobody can rename;
// a regular file in their place (a gitfile .git) is bound read-only.
func pinAncestors(root int, rel string, pinned map[string]bool) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if pinned[dir] {
			continue
		}
		pinned[dir] = true
		fd, err := openBeneath(root, dir)
		if err != nil {
			return nil // missing (or a link out): nothing below it to keep
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// A file where the entry's directory belongs: a gitfile
			// ("gitdir: …") names the repository git opens, so it is kept
			// read-only like the entry itself.
			err = bindReadOnly(root, fd, dir)
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("protect %s: %w", dir, err)
			}
			return nil
		}
		p := fdPath(fd)
		err = unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, "")
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("keep %s in place: %w", dir, err)
		}
	}
	return nil
}

// bindReadOnly binds fd (rel beneath root) over itself and makes the new
// mount, and every mount below it, read-only, nosuid and nodev.
func bindReadOnly(root, fd int, rel string) error {
	p := fdPath(fd)
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	top, err := openBeneath(root, rel) // now the new mount's root
	if err != nil {
		return err
	}
	defer unix.Close(top)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	err = unix.MountSetattr(top, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr)
	if errors.Is(err, unix.ENOSYS) { // kernels before 5.12: the top mount only
		err = unix.Mount("", fdPath(top), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	}
	return err
}

// openBeneath opens rel below root (O_PATH), following symlinks that stay
// beneath it and no /proc magic links.
func openBeneath(root int, rel string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	return unix.Openat2(root, rel, &how)
}

// createDir makes directory rel (mode 0755) when its parent exists, and
// opens it.
func createDir(root int, rel string) (int, error) {
	parent, err := openBeneath(root, path.Dir(rel))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstat(parent, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, unix.ENOENT
	}
	// mkdirat needs a real directory descriptor, not O_PATH.
	dfd, err := unix.Openat(parent, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	if err := unix.Mkdirat(dfd, path.Base(rel), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	return openBeneath(root, rel)
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
