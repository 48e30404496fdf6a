package protect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// scanner walks a workspace for git directories (Watch).
type scanner struct {
	w     *Watch
	root  int
	dirs  int
	over  string          // why the walk stopped early: "depth" or "count"; "" when it did not
	seen  map[string]bool // git directories checked (a gitfile may name one twice)
	buf   []byte          // getdents64 buffer
	found []finding
	trees []workTree // work trees found, with their git directories, for gitlinks
	// treeSeen holds the work trees gitlinks followed.
	treeSeen map[string]bool
	// pointedSeen holds the workspace files repositories' configs and
	// hooks point to (pointed), true for a directory.
	pointedSeen map[string]bool
	config      bool // .git/config is protected: check config files, gitfiles and .git links
	hooks       bool
	commond     bool
}

// scan returns what the workspace's git directories hold that makes git
// run code (see Watch), and why the walk stopped at its bounds: "depth",
// "count" or "" when it did not.
func (w *Watch) scan(root int) ([]finding, string) {
	sc := &scanner{w: w, root: root, seen: map[string]bool{}, treeSeen: map[string]bool{}, pointedSeen: map[string]bool{}, buf: make([]byte, 32<<10)}
	_, sc.config = w.set.Match(".git/config", false)
	_, sc.hooks = w.set.Match(".git/hooks/x", false)
	_, sc.commond = w.set.Match(GitCommondir, false)
	if !sc.config && !sc.hooks && !sc.commond {
		return nil, ""
	}
	fd, err := unix.Dup(root)
	if err != nil {
		return nil, ""
	}
	sc.walk(fd, "", 0)
	if sc.over != "" && sc.config {
		sc.gitlinks()
	}
	sortFindings(sc.found)
	return sc.found, sc.over
}

// workTree is a work tree (rel beneath the root, "." for the root) and
// the git directory its .git is or names.
type workTree struct {
	tree, gitDir string
}

// walk reads directory fd (rel beneath the root; it takes fd over) and
// descends into its subdirectories, never through links. A directory
// holding HEAD, objects/ and refs/ is a bare repository git would use
// (gitrepository-layout(5)) and is checked like a .git directory. It reads the
// directory with getdents64 itself: an os.File per directory costs twice
// the system calls (BenchmarkWatchCheck).
func (sc *scanner) walk(fd int, rel string, depth int) {
	defer unix.Close(fd)
	var subdirs []string
	hasGit := false
	bare := 0 // bit 1: HEAD, 2: objects/, 4: refs/
	for {
		n, err := unix.Getdents(fd, sc.buf)
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(sc.buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				break
			}
			typ := sc.buf[off+18]
			name := sc.buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			switch {
			case string(name) == ".git":
				hasGit = true
			case string(name) == "HEAD":
				bare |= 1
			case string(name) == "commondir":
				bare |= 8
			case string(name) == "." || string(name) == "..":
			case typ != unix.DT_DIR && typ != unix.DT_UNKNOWN:
				// git tests objects/ and refs/ with access(2), which
				// follows a link and passes an executable file: any
				// entry of those names counts (fail closed).
				bare |= bareBit(string(name))
			case typ == unix.DT_DIR:
				subdirs = append(subdirs, string(name))
				bare |= bareBit(string(name))
			case typ == unix.DT_UNKNOWN:
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					subdirs = append(subdirs, string(name))
				}
				bare |= bareBit(string(name))
			}
		}
	}
	if hasGit {
		sc.gitEntry(fd, path.Join(rel, ".git"), depth)
	}
	if isRepositoryLayout(bare) {
		sc.gitDir(fd, rel, rel)
	}
	for _, name := range subdirs {
		if depth+1 >= scanMaxDepth {
			sc.over = "depth"
			return
		}
		if sc.dirs >= scanMaxDirs {
			sc.over = "count"
			return
		}
		sc.dirs++
		child, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			sc.walk(child, path.Join(rel, name), depth+1)
		}
	}
}

// gitlinks checks, after a walk cut off at its bounds, the repositories
// the index of each work tree found so far records as gitlinks
// (Gitlinks), and theirs in turn, without the walk's depth bound: the
// user's `git status` recurses into those wherever they lie. At most
// scanMaxGitlinks are followed; beyond that each further gitlink's config
// (or its .git when that is not a directory) is a finding identified by
// its inode, size and time, so one that changes is moved aside unchecked
// (fail closed).
func (sc *scanner) gitlinks() {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	followed, limit := 0, sc.w.maxGitlinks
	if limit <= 0 {
		limit = scanMaxGitlinks
	}
	for i := 0; i < len(sc.trees); i++ { // gitEntry appends while this runs
		t := sc.trees[i]
		if sc.treeSeen["\x00"+t.gitDir] {
			continue
		}
		sc.treeSeen["\x00"+t.gitDir] = true
		for _, p := range sc.indexGitlinks(t.gitDir) {
			target := path.Join(t.tree, p)
			if target == ".." || strings.HasPrefix(target, "../") || sc.treeSeen[target] {
				continue
			}
			sc.treeSeen[target] = true
			if followed >= limit {
				sc.unchecked(target, limit)
				continue
			}
			followed++
			dir, err := unix.Openat2(sc.root, target, &how)
			if err != nil {
				continue
			}
			sc.gitEntry(dir, path.Join(target, ".git"), 0)
			unix.Close(dir)
		}
	}
}

// indexGitlinks returns the gitlinks the index of git directory gitDir
// (beneath the root, no links) records; nil when there is none or it
// cannot be read (the entries before a malformed one still count).
func (sc *scanner) indexGitlinks(gitDir string) []string {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	git, err := unix.Openat2(sc.root, gitDir, &how)
	if err != nil {
		return nil
	}
	defer unix.Close(git)
	data, err := readBounded(git, "index", maxIndexSize)
	if err != nil {
		return nil
	}
	hashLen := 20
	if cfg, err := readBounded(git, "config", maxConfigSize); err == nil && bytes.Contains(bytes.ToLower(cfg), []byte("sha256")) {
		hashLen = 32
	}
	paths, _ := Gitlinks(data, hashLen)
	return paths
}

// unchecked records a gitlink's repository (work tree rel) that the
// bounds leave unchecked: its .git/config, or its .git when that is not
// a directory.
func (sc *scanner) unchecked(rel string, limit int) {
	var st unix.Stat_t
	p := path.Join(rel, ".git")
	gst, err := lstatBeneath(sc.root, p)
	if err != nil {
		return
	}
	if gst.Mode&unix.S_IFMT == unix.S_IFDIR {
		if cst, err := lstatBeneath(sc.root, path.Join(p, "config")); err == nil {
			p, st = path.Join(p, "config"), cst
		} else {
			return
		}
	} else {
		st = gst
	}
	sc.add(p, ".git/config", fmt.Sprintf("in a repository beyond the %d gitlinks hermes follows, so unchecked", limit),
		fmt.Sprintf("unchecked:%d:%d:%d:%d", st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec))
}

// isRepositoryLayout reports whether a directory's entries (bits: 1 HEAD,
// 2 objects, 4 refs, 8 commondir) are a git directory git would use
// (setup.c is_git_directory): HEAD with objects and refs, or HEAD with a
// commondir naming where they are.
func isRepositoryLayout(bits int) bool {
	return bits&7 == 7 || bits&9 == 9
}

func bareBit(name string) int {
	switch name {
	case "objects":
		return 2
	case "refs":
		return 4
	}
	return 0
}

// gitEntry checks a .git entry (rel, depth directories below the root)
// in directory parent: a git directory, a gitfile ("gitdir: <path>") or a
// symlink. A git directory's modules/ holds the git directories of its
// submodules (.git/modules/<name>, nested ones below <name>/modules/),
// which `git submodule update --init` adopts as they are: it is walked
// like the workspace.
func (sc *scanner) gitEntry(parent int, rel string, depth int) {
	var st unix.Stat_t
	if unix.Fstatat(parent, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fd, err := unix.Openat(parent, ".git", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		sc.gitDir(fd, rel, path.Dir(rel))
		sc.trees = append(sc.trees, workTree{tree: path.Dir(rel), gitDir: rel})
		if sc.config {
			if mods, err := unix.Openat(fd, "modules", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				sc.walk(mods, path.Join(rel, "modules"), depth+1)
			}
		}
		unix.Close(fd)
	case unix.S_IFLNK:
		if !sc.config {
			return
		}
		buf := make([]byte, 4096)
		n, _ := unix.Readlinkat(parent, ".git", buf)
		target := string(buf[:max(n, 0)])
		sc.add(rel, ".git/config", "a symbolic link to "+quote(target)+"; git would use the repository there", "link:"+target)
	case unix.S_IFREG:
		if sc.config {
			sc.gitfile(parent, rel)
		}
	}
}

// gitfile checks a gitfile: the directory it names must lie in the
// workspace, and is checked as a git directory.
func (sc *scanner) gitfile(parent int, rel string) {
	data, err := readBounded(parent, ".git", maxGitfileSize)
	if err != nil {
		sc.add(rel, ".git/config", "a gitfile hermes cannot read: "+err.Error(), "gitfile-unreadable")
		return
	}
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return // git refuses it
	}
	target = strings.TrimSpace(target)
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(sc.w.workspace, path.Dir(rel), target)
	}
	inside, err := filepath.Rel(sc.w.workspace, filepath.Clean(abs))
	if err != nil || inside == ".." || strings.HasPrefix(inside, "../") {
		sc.add(rel, ".git/config", "a gitfile naming "+quote(target)+", outside the workspace", "gitfile:"+target)
		return
	}
	// No links on the way: what is found there must be movable by the
	// same path (moveAside follows none either).
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(sc.root, filepath.ToSlash(inside), &how)
	switch {
	case errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP):
		sc.add(rel, ".git/config", "a gitfile naming "+quote(target)+", a path through a symbolic link or out of the workspace", "gitfile:"+target)
	case err == nil:
		sc.gitDir(fd, filepath.ToSlash(inside), path.Dir(rel))
		sc.trees = append(sc.trees, workTree{tree: path.Dir(rel), gitDir: filepath.ToSlash(inside)})
		unix.Close(fd)
	}
}

// gitDir checks git directory fd (rel, with work tree tree): its config
// files, hooks and commondir, and the workspace files its config and
// hooks point to (pointed).
func (sc *scanner) gitDir(fd int, rel, tree string) {
	if rel == "" {
		rel = "."
	}
	if tree == "" {
		tree = "."
	}
	if sc.seen[rel] {
		return
	}
	sc.seen[rel] = true
	top := rel == ".git"
	if sc.config {
		for _, name := range []string{"config", "config.worktree"} {
			if !(top && name == "config" && sc.w.topExisted["config"]) {
				sc.configFile(fd, path.Join(rel, name), name)
			}
		}
	}
	if sc.hooks && !(top && sc.w.topExisted["hooks"]) {
		sc.hookDir(fd, "hooks", path.Join(rel, "hooks"))
	}
	sc.pointed(fd, rel, tree)
	if sc.config {
		sc.sequencerTodos(fd, rel)
	}
	if sc.commond && !(top && sc.w.topExisted["commondir"]) {
		var st unix.Stat_t
		if unix.Fstatat(fd, "commondir", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			data, _ := readBounded(fd, "commondir", maxGitfileSize)
			sc.add(path.Join(rel, "commondir"), GitCommondir, "names another directory git would read config and hooks from", "commondir:"+string(data))
		}
	}
}

// configFile checks one git config file (name in git directory fd).
func (sc *scanner) configFile(fd int, rel, name string) {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		sc.add(rel, ".git/config", "a symbolic link", fmt.Sprintf("link:%d", st.Ino))
		return
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		sc.add(rel, ".git/config", "not a regular file", "special")
		return
	}
	data, err := readBounded(fd, name, maxConfigSize)
	if err != nil {
		sc.add(rel, ".git/config", "too large or unreadable to check: "+err.Error(), fmt.Sprintf("unreadable:%d", st.Size))
		return
	}
	if keys := UnapprovedKeys(data); len(keys) > 0 {
		sc.add(rel, ".git/config", "sets "+quote(strings.Join(keys, ", ")), strings.Join(keys, "\n"))
	}
}

// hookNames are the hooks git runs, by name (githooks(5)).
var hookNames = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist",
	"p4-pre-submit", "post-index-change",
}

// hookDir checks a hooks directory (name in directory parent, rel beneath
// the root): each name git runs (hookNames) is
// stat'ed directly, and an executable file or a link there is a hook git
// would run. A directory with more than scanMaxHooks entries is itself a
// finding: hermes does not list it through.
func (sc *scanner) hookDir(parent int, name, rel string) {
	var st unix.Stat_t
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		sc.add(rel, ".git/hooks/", "a symbolic link to a directory of hooks", "link")
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if ents, _ := f.ReadDir(scanMaxHooks + 1); len(ents) > scanMaxHooks {
		sc.add(rel, ".git/hooks/", fmt.Sprintf("a hooks directory with more than %d entries", scanMaxHooks), "crowded")
		return
	}
	for _, name := range hookNames {
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK || st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
			sc.add(rel+"/"+name, ".git/hooks/", "a hook git would run", fmt.Sprintf("hook:%d:%d:%d", st.Size, st.Mtim.Sec, st.Mtim.Nsec))
		}
	}
}

func (sc *scanner) add(rel, entry, why, detail string) {
	sc.found = append(sc.found, finding{path: rel, entry: entry, why: why, id: rel + "\x00" + detail})
}

// readBounded reads name in directory dir (no link followed, no FIFO
// waited on), at most limit bytes; a larger file is an error.
func readBounded(dir int, name string, limit int64) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// quote returns v quoted, without control characters, at most 120 bytes.
func quote(v string) string {
	if len(v) > 120 {
		v = v[:120] + "…"
	}
	return fmt.Sprintf("%q", v)
}
