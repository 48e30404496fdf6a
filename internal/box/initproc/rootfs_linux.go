package initproc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Before pivot_root the init runs as root in the host's file system tree,
// and the box's root (the overlay mount) holds whatever the box left in
// its persistent upper layer, symlinks included. A path such as
// merged+"/etc/hermes/box-ca.crt" handed to open(2) or mount(2) would
// follow a symlink /etc/hermes -> /srv planted by the box, out to the
// host. So every path inside the box's root is resolved by the kernel
// against a descriptor of that root, never as a host path string:
//
//   - mount points (/proc, /dev, /tmp, /run, /var/tmp, the workspace) must
//     be real directories of the box's tree: realDir walks them one
//     component at a time without following symlinks, and replaces a
//     symlink or file the box left in their place with an empty directory;
//     the mount then goes onto /proc/self/fd/N of that directory;
//   - paths to cover (hidePath) resolve as the box itself will resolve
//     them after pivot_root: openat2(2) with RESOLVE_IN_ROOT (symlinks stay
//     inside the root) and RESOLVE_NO_MAGICLINKS;
//   - files hermes writes (the egress CA) resolve the same way and, with
//     RESOLVE_NO_XDEV, only inside the overlay itself; anything else (a
//     dangling link, a link into a tmpfs, a FIFO) is replaced by a fresh
//     regular file.
//
// The box has no process running while its init sets up (its state lock
// is held and the previous init's pid namespace is gone), so nothing
// changes the tree between these checks and their use.

// boxRoot is the box's root directory opened as an O_PATH descriptor.
type boxRoot struct {
	fd   int
	path string // for error messages
}

// openBoxRoot opens the box root at path (a host path made by hermes).
func openBoxRoot(path string) (*boxRoot, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open box root %s: %w", path, err)
	}
	return &boxRoot{fd: fd, path: path}, nil
}

func (r *boxRoot) close() { unix.Close(r.fd) }

// FDPath names the file descriptor fd refers to, for mount(2).
func FDPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// inRoot is how paths the box controls are resolved: inside the root,
// never through /proc magic links.
const inRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// boxRelPath turns an absolute box path into its components, refusing
// "..".
func boxRelPath(p string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(filepath.Clean("/"+p), "/") {
		switch c {
		case "", ".":
		case "..":
			return nil, fmt.Errorf("path %q leaves the box root", p)
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

// realDir returns an O_PATH descriptor of directory p of the box (absolute
// or relative to its root), creating missing components (mode 0755) and
// replacing any component that is not a directory (a symlink, a file)
// with an empty one. No symlink is ever followed.
func (r *boxRoot) realDir(p string) (int, error) {
	parts, err := boxRelPath(p)
	if err != nil {
		return -1, err
	}
	cur, err := unix.FcntlInt(uintptr(r.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, name := range parts {
		next, err := realChild(cur, name)
		unix.Close(cur)
		if err != nil {
			return -1, fmt.Errorf("/%s in the box: %w", strings.Join(parts[:i+1], "/"), err)
		}
		cur = next
	}
	return cur, nil
}

// realChild opens directory name inside dirfd, making it first (and
// removing what is there instead of a directory).
func realChild(dirfd int, name string) (int, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
	case err == nil:
		// A symlink or a file the box left where a directory belongs.
		if err := unix.Unlinkat(dirfd, name, 0); err != nil {
			return -1, fmt.Errorf("replace non-directory: %w", err)
		}
		fallthrough
	case errors.Is(err, unix.ENOENT):
		if err := unix.Mkdirat(dirfd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
	default:
		return -1, err
	}
	return unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// mount mounts source (fstype, flags, data) on directory dir of the box,
// made a real directory first (realDir).
func (r *boxRoot) mount(dir, source, fstype string, flags uintptr, data string) error {
	fd, err := r.realDir(dir)
	if err != nil {
		return fmt.Errorf("mount %s: %w", fstype, err)
	}
	defer unix.Close(fd)
	if err := unix.Mount(source, FDPath(fd), fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on /%s: %w", fstype, strings.TrimPrefix(dir, "/"), err)
	}
	return nil
}

// resolve opens box path p as the box will see it (RESOLVE_IN_ROOT), with
// an O_PATH descriptor of p itself when it is a symlink (O_NOFOLLOW).
func (r *boxRoot) resolve(p string) (int, error) {
	parts, err := boxRelPath(p)
	if err != nil {
		return -1, err
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: inRoot}
	return unix.Openat2(r.fd, strings.Join(append([]string{"."}, parts...), "/"), &how)
}

// readFile reads regular file p of the box's overlay (resolved inside the
// root and inside the overlay mount); anything else reads as empty. The
// result has room for extra more bytes, for the caller to append.
func (r *boxRoot) readFile(p string, extra int) []byte {
	parts, err := boxRelPath(p)
	if err != nil || len(parts) == 0 {
		return nil
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: inRoot | unix.RESOLVE_NO_XDEV}
	fd, err := unix.Openat2(r.fd, strings.Join(parts, "/"), &how)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	// Read in place, sized by fstat with room for extra (a file that grows
	// meanwhile is read in more rounds), up to 64 MiB.
	out := make([]byte, 0, min(max(st.Size, 0), 64<<20)+int64(extra)+1)
	for len(out) < 64<<20 {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		n, err := unix.Read(fd, out[len(out):min(cap(out), 64<<20)])
		if n <= 0 || err != nil {
			break
		}
		out = out[:len(out)+n]
	}
	return out
}

// writeFile replaces the contents of file p of the box with data. p is
// resolved inside the root and inside the overlay mount; when that fails,
// or leads to something other than a regular file, p's directory is made
// a real directory (realDir) and p a new regular file in it.
func (r *boxRoot) writeFile(p string, data []byte, perm uint32) error {
	parts, err := boxRelPath(p)
	if err != nil || len(parts) == 0 {
		return fmt.Errorf("write %s in the box: bad path", p)
	}
	how := unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Mode: uint64(perm), Resolve: inRoot | unix.RESOLVE_NO_XDEV}
	fd, err := unix.Openat2(r.fd, strings.Join(parts, "/"), &how)
	if err == nil && !isRegularFD(fd) {
		unix.Close(fd)
		err = errors.New("not a regular file")
	}
	if err != nil {
		dir, derr := r.realDir(strings.Join(parts[:len(parts)-1], "/"))
		if derr != nil {
			return fmt.Errorf("write %s in the box: %w", p, derr)
		}
		defer unix.Close(dir)
		name := parts[len(parts)-1]
		if uerr := unix.Unlinkat(dir, name, 0); uerr != nil && !errors.Is(uerr, unix.ENOENT) {
			return fmt.Errorf("write %s in the box: replace it: %w", p, uerr)
		}
		fd, err = unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != nil {
			return fmt.Errorf("write %s in the box: %w", p, err)
		}
	}
	defer unix.Close(fd)
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			return fmt.Errorf("write %s in the box: %w", p, err)
		}
		data = data[n:]
	}
	return nil
}

func isRegularFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}
