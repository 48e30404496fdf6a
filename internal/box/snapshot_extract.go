package box

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// extractPolicy says which entries an extraction keeps.
type extractPolicy struct {
	// keepWhiteouts recreates character devices 0:0 (overlay whiteouts)
	// and rejects any other device node. When false (base images) all
	// device nodes are skipped: the box mounts its own /dev.
	keepWhiteouts bool
}

// treeExtractor writes tar entries below one root directory using only
// *at system calls on directory descriptors opened component by component
// with O_NOFOLLOW, so no entry can write outside the root.
type treeExtractor struct {
	root     string
	rootFD   int
	policy   extractPolicy
	chown    bool // false when not root: ownership cannot be given away
	buf      []byte
	cacheDir string // relative dir whose descriptor is cacheFD
	cacheFD  int
	dirs     []*tar.Header // directory metadata applied at the end
}

// extractTree extracts the tar stream r below the existing directory root.
func extractTree(r io.Reader, root string, policy extractPolicy) error {
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	x := &treeExtractor{
		root:    root,
		rootFD:  rootFD,
		policy:  policy,
		chown:   os.Geteuid() == 0,
		buf:     make([]byte, snapshotCopyBufferSize),
		cacheFD: -1,
	}
	defer x.close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		if err := x.extract(hdr, tr); err != nil {
			return err
		}
	}
	return x.finishDirs()
}

func (x *treeExtractor) close() {
	if x.cacheFD >= 0 {
		unix.Close(x.cacheFD)
		x.cacheFD = -1
	}
	unix.Close(x.rootFD)
}

// cleanEntryName validates a tar entry name and returns it relative to the
// root ("." for the root itself). Absolute names and ".." components are
// errors.
func cleanEntryName(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("archive entry %q has an invalid name", name)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("archive entry %q is an absolute path; only relative names are accepted", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("archive entry %q climbs out of the target with \"..\"", name)
		}
	}
	return path.Clean(name), nil
}

// extract creates one entry.
func (x *treeExtractor) extract(hdr *tar.Header, body io.Reader) error {
	name, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "." {
		if hdr.Typeflag != tar.TypeDir {
			return fmt.Errorf("archive entry %q names the target root but is not a directory", hdr.Name)
		}
		hdr.Name = "."
		x.dirs = append(x.dirs, hdr)
		return nil
	}
	dir, base := path.Split(name)
	parent, err := x.dirFD(path.Clean(dir))
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.makeDir(parent, name, base, hdr)
	case tar.TypeReg, tar.TypeGNUSparse:
		return x.writeFile(parent, name, base, hdr, body)
	case tar.TypeSymlink:
		if err := x.replaceable(parent, name, base, func() error {
			return unix.Symlinkat(hdr.Linkname, parent, base)
		}); err != nil {
			return err
		}
		return x.applyMeta(parent, name, base, hdr, false)
	case tar.TypeLink:
		return x.makeLink(parent, name, base, hdr)
	case tar.TypeChar, tar.TypeBlock:
		isWhiteout := hdr.Typeflag == tar.TypeChar && hdr.Devmajor == 0 && hdr.Devminor == 0
		if !x.policy.keepWhiteouts {
			return nil
		}
		if !isWhiteout {
			return fmt.Errorf("archive entry %q is a device node %d:%d; snapshots only carry overlay whiteouts (0:0)", hdr.Name, hdr.Devmajor, hdr.Devminor)
		}
		if err := x.replaceable(parent, name, base, func() error {
			return unix.Mknodat(parent, base, unix.S_IFCHR|uint32(hdr.Mode&0o7777), 0)
		}); err != nil {
			return err
		}
		return x.applyMeta(parent, name, base, hdr, false)
	case tar.TypeFifo:
		if err := x.replaceable(parent, name, base, func() error {
			return unix.Mknodat(parent, base, unix.S_IFIFO|uint32(hdr.Mode&0o7777), 0)
		}); err != nil {
			return err
		}
		return x.applyMeta(parent, name, base, hdr, true)
	default:
		return fmt.Errorf("archive entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
	}
}

// dirFD returns a descriptor for the directory rel below the root,
// creating missing components (0755). Every component is opened with
// O_NOFOLLOW|O_DIRECTORY, so a symlink anywhere on the way is an error.
// The descriptor stays owned by the extractor.
func (x *treeExtractor) dirFD(rel string) (int, error) {
	if rel == "." {
		return x.rootFD, nil
	}
	if x.cacheFD >= 0 && x.cacheDir == rel {
		return x.cacheFD, nil
	}
	fd, err := x.openDir(rel, true)
	if err != nil {
		return -1, err
	}
	if x.cacheFD >= 0 {
		unix.Close(x.cacheFD)
	}
	x.cacheDir, x.cacheFD = rel, fd
	return fd, nil
}

// openDir opens rel below the root component by component; the caller
// closes the result. With create, missing components are made 0755.
func (x *treeExtractor) openDir(rel string, create bool) (int, error) {
	fd := x.rootFD
	for _, part := range strings.Split(rel, "/") {
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if fd != x.rootFD {
			unix.Close(fd)
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("archive path %q goes through %q, which is not a directory (a symlink or file); refusing to write through it", rel, part)
		}
		if err != nil {
			return -1, fmt.Errorf("open %s/%s: %w", x.root, rel, err)
		}
		fd = next
	}
	return fd, nil
}

// replaceable runs create; if the name already exists as a non-directory
// it is unlinked (never followed) and create runs again, so a later entry
// wins as in tar(1).
func (x *treeExtractor) replaceable(parent int, name, base string, create func() error) error {
	err := create()
	if errors.Is(err, unix.EEXIST) {
		if err = unix.Unlinkat(parent, base, 0); err != nil {
			return fmt.Errorf("replace %s/%s: %w", x.root, name, err)
		}
		err = create()
	}
	if err != nil {
		return fmt.Errorf("create %s/%s: %w", x.root, name, err)
	}
	return nil
}

func (x *treeExtractor) makeDir(parent int, name, base string, hdr *tar.Header) error {
	err := unix.Mkdirat(parent, base, 0o700)
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if err = unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("archive entry %q is a directory but an earlier entry made it a non-directory", hdr.Name)
		}
	}
	if err != nil {
		return fmt.Errorf("mkdir %s/%s: %w", x.root, name, err)
	}
	hdr.Name = name
	x.dirs = append(x.dirs, hdr)
	return nil
}

func (x *treeExtractor) writeFile(parent int, name, base string, hdr *tar.Header, body io.Reader) error {
	var fd int
	if err := x.replaceable(parent, name, base, func() (err error) {
		fd, err = unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	}); err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), x.root+"/"+name)
	_, err := io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{body}, x.buf)
	if err == nil && x.chown {
		err = f.Chown(hdr.Uid, hdr.Gid)
	}
	if err == nil {
		err = f.Chmod(os.FileMode(hdr.Mode & 0o777))
		if hdr.Mode&0o7000 != 0 && err == nil {
			err = unix.Fchmod(fd, uint32(hdr.Mode&0o7777))
		}
	}
	if err == nil {
		err = setXattrs(hdr, func(attr string, value []byte) error { return unix.Fsetxattr(fd, attr, value, 0) })
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", x.root, name, err)
	}
	return setTimes(parent, base, hdr)
}

func (x *treeExtractor) makeLink(parent int, name, base string, hdr *tar.Header) error {
	target, err := cleanEntryName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hardlink %q: %w", hdr.Name, err)
	}
	if target == "." {
		return fmt.Errorf("hardlink %q points at the target root", hdr.Name)
	}
	tdir, tbase := path.Split(target)
	tparent := x.rootFD
	if rel := path.Clean(tdir); rel != "." {
		if tparent, err = x.openDir(rel, false); err != nil {
			return fmt.Errorf("hardlink %q: %w", hdr.Name, err)
		}
		defer unix.Close(tparent)
	}
	return x.replaceable(parent, name, base, func() error {
		return unix.Linkat(tparent, tbase, parent, base, 0)
	})
}

// applyMeta sets owner, xattrs, mode (when chmod) and times of a
// non-regular entry without following it.
func (x *treeExtractor) applyMeta(parent int, name, base string, hdr *tar.Header, chmod bool) error {
	if x.chown {
		if err := unix.Fchownat(parent, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown %s/%s: %w", x.root, name, err)
		}
	}
	if chmod {
		if err := unix.Fchmodat(parent, base, uint32(hdr.Mode&0o7777), 0); err != nil {
			return fmt.Errorf("chmod %s/%s: %w", x.root, name, err)
		}
	}
	// The parent descriptor's /proc magic link plus a single component
	// lets lsetxattr act on the entry itself, never on a symlink target.
	procPath := "/proc/self/fd/" + strconv.Itoa(parent) + "/" + base
	if err := setXattrs(hdr, func(attr string, value []byte) error { return unix.Lsetxattr(procPath, attr, value, 0) }); err != nil {
		return fmt.Errorf("xattrs of %s/%s: %w", x.root, name, err)
	}
	return setTimes(parent, base, hdr)
}

// finishDirs applies directory metadata deepest first, after all children
// exist, so mtimes stick and read-only dirs did not block extraction.
func (x *treeExtractor) finishDirs() error {
	if x.cacheFD >= 0 {
		unix.Close(x.cacheFD)
		x.cacheFD = -1
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		hdr := x.dirs[i]
		fd := x.rootFD
		if hdr.Name != "." {
			var err error
			if fd, err = x.openDir(hdr.Name, false); err != nil {
				return err
			}
		}
		err := x.finishDir(fd, hdr)
		if fd != x.rootFD {
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("directory %s/%s: %w", x.root, hdr.Name, err)
		}
	}
	return nil
}

func (x *treeExtractor) finishDir(fd int, hdr *tar.Header) error {
	if x.chown {
		if err := unix.Fchown(fd, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, uint32(hdr.Mode&0o7777)); err != nil {
		return err
	}
	if err := setXattrs(hdr, func(attr string, value []byte) error { return unix.Fsetxattr(fd, attr, value, 0) }); err != nil {
		return err
	}
	ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	return unix.UtimesNanoAt(fd, "", []unix.Timespec{ts, ts}, unix.AT_EMPTY_PATH)
}

// setXattrs applies the kept "SCHILY.xattr.*" PAX records of hdr with set.
func setXattrs(hdr *tar.Header, set func(attr string, value []byte) error) error {
	for key, value := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(key, paxXattrPrefix)
		if !ok || !snapshotKeepsXattr(attr) {
			continue
		}
		if err := set(attr, []byte(value)); err != nil {
			return fmt.Errorf("setxattr %s: %w", attr, err)
		}
	}
	return nil
}

// setTimes sets atime and mtime of base in parent to hdr.ModTime without
// following symlinks.
func setTimes(parent int, base string, hdr *tar.Header) error {
	ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	if err := unix.UtimesNanoAt(parent, base, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times of %s: %w", base, err)
	}
	return nil
}
