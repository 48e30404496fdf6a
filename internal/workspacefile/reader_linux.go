package workspacefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend/local"
)

// MaxDirEntries bounds the names ReadDir returns for one directory.
const MaxDirEntries = 10000

// resolveBeneath keeps every lookup inside the root and away from /proc
// magic links (openat2(2)).
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// Reader reads beneath one workspace root. It holds the root open, so a
// rename of the directory does not move the reads elsewhere. A Reader is
// safe for concurrent use; Close releases it.
type Reader struct {
	root      string // absolute path of the root, as opened
	dirfd     int    // the root, O_PATH|O_DIRECTORY
	resolve   uint64 // openat2 resolve flags
	protected *local.ProtectedFiles
	// osRoot resolves names where openat2 is missing (kernels before
	// 5.6); nil when openat2 works.
	osRoot *os.Root
}

// Open returns a Reader over the directory root (symlinks in root itself
// are followed: the user chose it). hermesHome is HERMES_HOME ("" =
// none): its protected files are refused by device and inode.
func Open(root, hermesHome string) (*Reader, error) {
	pf, err := local.LoadProtectedFiles(hermesHome)
	if err != nil {
		return nil, err
	}
	return OpenWith(root, pf)
}

// OpenWith is Open with HERMES_HOME's protected files already loaded, for
// callers that open several roots (one per directory searched).
func OpenWith(root string, pf *local.ProtectedFiles) (*Reader, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	r := &Reader{root: abs, dirfd: fd, protected: pf, resolve: resolveBeneath}
	if abs == "/" {
		// Beneath "/" is everywhere, but RESOLVE_BENEATH would refuse every
		// absolute link (/usr/bin/cc -> /etc/alternatives/cc); in the root
		// they resolve as usual. Magic links stay refused.
		r.resolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	}
	probe, err := unix.Openat2(fd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveBeneath})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) { // no openat2, or a seccomp filter denies it
		return r, r.useOSRoot()
	}
	if err == nil {
		unix.Close(probe)
	}
	return r, nil
}

// useOSRoot switches r to Go's os.Root for name resolution.
func (r *Reader) useOSRoot() error {
	root, err := os.OpenRoot(r.root)
	if err != nil {
		r.Close()
		return err
	}
	r.osRoot = root
	return nil
}

// Close releases the root.
func (r *Reader) Close() error {
	if r.osRoot != nil {
		r.osRoot.Close()
	}
	return unix.Close(r.dirfd)
}

// Root returns the workspace root's absolute path.
func (r *Reader) Root() string { return r.root }

// ReadFile returns the content of the regular file name (relative to the
// root, or absolute inside it), at most limit bytes: a larger file is
// refused from its size and not read. Refusals are *RefusedError; a
// missing file is an error matching fs.ErrNotExist.
func (r *Reader) ReadFile(name string, limit int64) ([]byte, error) {
	rel, err := relName(r.root, name)
	if err != nil {
		return nil, err
	}
	st, err := r.statRel(name, rel)
	if err != nil {
		return nil, err
	}
	if err := r.checkFile(name, st); err != nil {
		return nil, err
	}
	if st.Size > limit {
		return nil, tooLarge(name, st.Size, limit)
	}
	f, err := r.openRel(name, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &now); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		return nil, &RefusedError{Kind: Replaced, Name: name, Reason: "was replaced while it was being read"}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(name, int64(len(b)), limit)
	}
	return b, nil
}

// checkFile refuses what is not a readable regular file: directories,
// FIFOs, sockets, devices and HERMES_HOME's protected files.
func (r *Reader) checkFile(name string, st *unix.Stat_t) error {
	if err := refuseType(name, fileMode(st)); err != nil {
		return err
	}
	if r.protected.Contains(st) {
		return &RefusedError{Kind: Protected, Name: name, Reason: reasonProtected}
	}
	return nil
}

// Stat describes name, following symbolic links that stay inside the
// root. HERMES_HOME's protected files are refused, whatever their type.
func (r *Reader) Stat(name string) (fs.FileInfo, error) {
	rel, err := relName(r.root, name)
	if err != nil {
		return nil, err
	}
	st, err := r.statRel(name, rel)
	if err != nil {
		return nil, err
	}
	if r.protected.Contains(st) {
		return nil, &RefusedError{Kind: Protected, Name: name, Reason: reasonProtected}
	}
	return &fileInfo{name: path.Base(filepath.ToSlash(rel)), st: *st}, nil
}

// IsDir reports whether name is a directory inside the root (following
// links that stay inside); a refusal or a missing name is an error.
func (r *Reader) IsDir(name string) (bool, error) {
	st, err := r.Stat(name)
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

// ReadDir lists the directory name (links inside the root followed),
// sorted by name, at most MaxDirEntries entries. The entries describe the
// names themselves (lstat): a symbolic link is listed as a link. Names
// with control characters are left out.
func (r *Reader) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := relName(r.root, name)
	if err != nil {
		return nil, err
	}
	st, err := r.statRel(name, rel)
	if err != nil {
		return nil, err
	}
	if !fileMode(st).IsDir() {
		return nil, &RefusedError{Kind: NotFile, Name: name, Reason: reasonNotDir}
	}
	if r.protected.Contains(st) {
		return nil, &RefusedError{Kind: Protected, Name: name, Reason: reasonProtected}
	}
	f, err := r.openRel(name, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(MaxDirEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return direntries(int(f.Fd()), names), nil
}

// statRel stats rel (following links beneath the root) through an O_PATH
// descriptor, so nothing is opened for reading.
func (r *Reader) statRel(name, rel string) (*unix.Stat_t, error) {
	if r.osRoot != nil {
		return r.statOSRoot(name, rel)
	}
	fd, err := r.openat2(rel, unix.O_PATH)
	if err != nil {
		return nil, r.resolveError(name, rel, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return &st, nil
}

// openRel opens rel beneath the root with flags (plus O_CLOEXEC).
func (r *Reader) openRel(name, rel string, flags int) (*os.File, error) {
	if r.osRoot != nil {
		f, err := r.osRoot.OpenFile(rel, flags&^unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, r.osRootError(name, err)
		}
		return f, nil
	}
	fd, err := r.openat2(rel, flags)
	if err != nil {
		return nil, r.resolveError(name, rel, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(r.root, rel)), nil
}

// openat2 opens rel beneath the root, retrying the EAGAIN the kernel
// returns when a concurrent rename raced the lookup.
func (r *Reader) openat2(rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: r.resolve}
	var err error
	for range 8 {
		var fd int
		fd, err = unix.Openat2(r.dirfd, rel, &how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
	return -1, err
}

// resolveError turns a failed lookup of rel into a refusal naming why.
func (r *Reader) resolveError(name, rel string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		return &RefusedError{Kind: LinkOut, Name: name, Reason: r.outsideReason(rel)}
	case errors.Is(err, unix.ELOOP):
		return &RefusedError{Kind: LinkOut, Name: name, Reason: reasonMagicLink}
	case errors.Is(err, unix.ENOENT):
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case errors.Is(err, unix.ENOTDIR):
		return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (a path element is not a directory)", fs.ErrNotExist)}
	}
	return &fs.PathError{Op: "open", Path: name, Err: err}
}

// outsideReason says whether rel itself is the link that leaves the root
// or one of its parent directories is.
func (r *Reader) outsideReason(rel string) string {
	dir, base := filepath.Split(rel)
	if dir == "" {
		dir = "."
	}
	parent, err := r.openat2(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return reasonPathOut
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return reasonLinkOut
	}
	return reasonPathOut
}

// fileMode converts a stat mode to an fs.FileMode (type and permissions).
func fileMode(st *unix.Stat_t) fs.FileMode {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// fileInfo is an fs.FileInfo from a stat.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return fileMode(&fi.st) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }

// direntries describes names of the directory dirfd with lstat, sorted;
// names with control characters and names that vanished are left out.
func direntries(dirfd int, names []string) []fs.DirEntry {
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if HasControl(n) || unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(&fileInfo{name: n, st: st}))
	}
	sortEntries(out)
	return out
}

// ReadHostFile reads a file the user owns on the host (HERMES_HOME's
// SOUL.md, say): symbolic links are followed, but only a regular file of
// at most limit bytes is read, opened non-blocking so a FIFO put in its
// place cannot hang the caller. Refusals are *RefusedError naming path.
func ReadHostFile(path string, limit int64) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() { // not even opened
		return nil, refuseType(path, fi.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := refuseType(path, fileMode(&st)); err != nil {
		return nil, err
	}
	if st.Size > limit {
		return nil, tooLarge(path, st.Size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, int64(len(b)), limit)
	}
	return b, nil
}

// Sub returns a Reader rooted at the directory name beneath r (reached
// without leaving r), with r's protected files; close both.
func (r *Reader) Sub(name string) (*Reader, error) {
	rel, err := relName(r.root, name)
	if err != nil {
		return nil, err
	}
	abs := filepath.Join(r.root, rel)
	if r.osRoot != nil {
		sub, err := r.osRoot.OpenRoot(rel)
		if err != nil {
			return nil, r.osRootError(name, err)
		}
		fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			sub.Close()
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &Reader{root: abs, dirfd: fd, protected: r.protected, osRoot: sub, resolve: resolveBeneath}, nil
	}
	fd, err := r.openat2(rel, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOTDIR) {
		return nil, &RefusedError{Kind: NotFile, Name: name, Reason: reasonNotDir}
	}
	if err != nil {
		return nil, r.resolveError(name, rel, err)
	}
	return &Reader{root: abs, dirfd: fd, protected: r.protected, resolve: resolveBeneath}, nil
}
