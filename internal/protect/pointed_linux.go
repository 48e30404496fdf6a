package protect

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// pointed checks the workspace files git directory fd (rel, work tree
// tree) points to (see configPointers): each included config file like a
// config, the core.hooksPath directory like a hooks directory, and the
// target of each hook that is a link like the hook itself. It runs for
// the top-level repository too, whose own config and hooks are read-only
// mounts: the files they point to are not.
func (sc *scanner) pointed(fd int, rel, tree string) {
	if !sc.config && !sc.hooks {
		return
	}
	if data, err := readBounded(fd, "config", maxConfigSize); err == nil {
		hooksPath, includes := configPointers(data)
		if sc.config {
			sc.includes(rel, includes, 1)
		}
		if target, ok := workspaceRel(sc.w.workspace, tree, hooksPath); ok && sc.hooks && sc.newPointed(target, true) && !sc.w.bound[target] {
			sc.hooksPathDir(target)
		}
	}
	if sc.hooks {
		sc.hookLinks(fd, path.Join(rel, "hooks"))
	}
}

// includes checks the config files a config in directory base includes,
// and theirs, up to maxIncludeDepth levels.
func (sc *scanner) includes(base string, paths []string, depth int) {
	if depth > maxIncludeDepth {
		return
	}
	for _, p := range paths {
		target, ok := workspaceRel(sc.w.workspace, base, p)
		if !ok || !sc.newPointed(target, false) {
			continue
		}
		dir, err := sc.openDirBeneath(path.Dir(target))
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				sc.add(target, ".git/config", "a config file the repository includes, through a symbolic link", "include-link")
			}
			continue
		}
		if !sc.w.bound[target] {
			sc.configFile(dir, target, path.Base(target))
		}
		if data, err := readBounded(dir, path.Base(target), maxConfigSize); err == nil {
			_, more := configPointers(data)
			sc.includes(path.Dir(target), more, depth+1)
		}
		unix.Close(dir)
	}
}

// hooksPathDir checks the core.hooksPath directory target (relative to
// the workspace) like a repository's hooks directory.
func (sc *scanner) hooksPathDir(target string) {
	parent, err := sc.openDirBeneath(path.Dir(target))
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			sc.add(target, ".git/hooks/", "the repository's core.hooksPath, through a symbolic link", "hookspath-link")
		}
		return
	}
	defer unix.Close(parent)
	sc.hookDir(parent, path.Base(target), target)
}

// hookLinks checks the targets of the hooks in hooksRel that are links to
// a file in the workspace: rewriting tools/pre-commit runs as surely as
// writing .git/hooks/pre-commit.
func (sc *scanner) hookLinks(gitfd int, hooksRel string) {
	fd, err := unix.Openat(gitfd, "hooks", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	for _, name := range hookNames {
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil || n <= 0 {
			continue
		}
		target, ok := workspaceRel(sc.w.workspace, hooksRel, string(buf[:n]))
		if !ok || !sc.newPointed(target, false) {
			continue
		}
		st, err := lstatBeneath(sc.root, target)
		switch {
		case sc.w.bound[target]:
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV):
			sc.add(target, ".git/hooks/", "the target of hook "+name+", through a symbolic link", "hook-target-link")
		case err == nil:
			sc.add(target, ".git/hooks/", "the target of hook "+name+", which git runs",
				fmt.Sprintf("hook-target:%d:%d:%o:%d:%d", st.Ino, st.Size, st.Mode, st.Mtim.Sec, st.Mtim.Nsec))
		}
	}
}

// openDirBeneath opens directory rel beneath the root, following no link.
func (sc *scanner) openDirBeneath(rel string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	return unix.Openat2(sc.root, rel, &how)
}

// boundPointed returns the files and directories Pointed names that exist
// in the workspace (root): read-only mounts when the Watch is mounted, so
// only the user changes them and the check leaves them, as it leaves the
// top-level .git/config.
func (s Set) boundPointed(workspace string, root int) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Pointed(workspace) {
		p = strings.TrimSuffix(p, "/")
		if exists(root, p) {
			out[p] = true
		}
	}
	return out
}

// Pointed returns, as entries for With, the workspace files the top-level
// repository's config and hooks point to (see configPointers):
// core.hooksPath as a directory entry, included config files and the
// targets of hooks that are links; nil when the Set protects neither
// .git/config nor .git/hooks/ or there is no such repository. A box or a
// guarded command binds them read-only with the Set's entries.
func (s Set) Pointed(workspace string) []string {
	if s.Empty() || workspace == "" {
		return nil
	}
	root, err := openRoot(workspace)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	w := &Watch{set: s, workspace: workspace, topExisted: map[string]bool{"config": true, "hooks": true, "commondir": true}}
	sc := &scanner{w: w, root: root, seen: map[string]bool{}, treeSeen: map[string]bool{}, pointedSeen: map[string]bool{}}
	_, sc.config = s.Match(".git/config", false)
	_, sc.hooks = s.Match(".git/hooks/x", false)
	git, err := sc.openDirBeneath(".git")
	if err != nil {
		return nil
	}
	defer unix.Close(git)
	sc.pointed(git, ".git", ".")
	out := make([]string, 0, len(sc.pointedSeen))
	for t, dir := range sc.pointedSeen {
		if dir {
			t += "/"
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// newPointed records target (a directory when dir) as pointed to and
// reports whether it was new.
func (sc *scanner) newPointed(target string, dir bool) bool {
	if _, ok := sc.pointedSeen[target]; ok {
		return false
	}
	sc.pointedSeen[target] = dir
	return true
}
