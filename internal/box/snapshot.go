package box

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// snapshotCopyBufferSize is the buffer used to move file contents in and
// out of snapshot archives (1 MiB: large enough that a 50 MB upper layer
// needs few read/write calls per big file).
const snapshotCopyBufferSize = 1 << 20

// snapshotPAXXattrPrefix is the PAX record prefix for extended attributes used by
// GNU tar, bsdtar and Go's archive/tar ("SCHILY.xattr.<name>").
const snapshotPAXXattrPrefix = "SCHILY.xattr."

// SnapshotUpper writes the overlayfs upper directory upperDir to w as a
// tar archive (PAX format) compressed with zstd (RFC 8878).
//
// Kept per entry: regular files, directories, symlinks, hardlinks (as tar
// link entries to the first path seen), fifos, permission bits including
// setuid/setgid/sticky, numeric uid/gid, mtimes to the nanosecond, and the
// extended attributes listed by snapshotKeepsXattr as PAX
// "SCHILY.xattr.*" records (trusted.overlay.opaque/redirect, user.*,
// security.capability, POSIX ACLs). Overlay whiteouts (character devices
// 0:0, see the kernel's Documentation/filesystems/overlayfs.rst) are kept
// as tar character-device entries. Other device nodes and sockets cannot
// be created in a box and are skipped.
//
// The box must be stopped or frozen while the snapshot runs; a file that
// changes size meanwhile makes SnapshotUpper fail. The root of the archive
// is the entry "./" carrying upperDir's own metadata.
func SnapshotUpper(upperDir string, w io.Writer) error {
	enc, err := zstd.NewWriter(w,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return fmt.Errorf("snapshot %s: start zstd: %w", upperDir, err)
	}
	tw := newSnapshotArchiver(enc, true)
	if err := tw.addTree(upperDir); err != nil {
		enc.Close()
		return fmt.Errorf("snapshot %s: %w", upperDir, err)
	}
	if err := tw.tw.Close(); err != nil {
		enc.Close()
		return fmt.Errorf("snapshot %s: finish tar: %w", upperDir, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("snapshot %s: finish zstd: %w", upperDir, err)
	}
	return nil
}

// RestoreUpper extracts a SnapshotUpper archive read from r into upperDir,
// which must be empty or not exist yet (it is created 0755).
//
// Extraction never leaves upperDir: entry names that are absolute or hold
// ".." are rejected, every parent directory is opened one component at a
// time with O_NOFOLLOW (a symlink in the archive can never redirect a
// later write), and hardlink targets are resolved the same way. Whiteouts
// are recreated with mknod, xattrs with setxattr (setting trusted.* needs
// CAP_SYS_ADMIN, so restoring an overlay upper needs root). Device nodes
// other than whiteouts are rejected. On error upperDir may hold a partial
// tree; callers remove it.
func RestoreUpper(r io.Reader, upperDir string) error {
	if err := snapshotEnsureEmptyDir(upperDir); err != nil {
		return err
	}
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return fmt.Errorf("restore into %s: start zstd: %w", upperDir, err)
	}
	defer dec.Close()
	if err := snapshotExtractTree(dec, upperDir, snapshotExtractPolicy{keepWhiteouts: true}); err != nil {
		return fmt.Errorf("restore into %s: %w", upperDir, err)
	}
	return nil
}

// snapshotEnsureEmptyDir creates dir (0755, with parents) or checks that it is an
// empty directory.
func snapshotEnsureEmptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("restore target %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("restore target %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("restore target %s: %w", dir, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("%w: %s holds %q; restore needs an empty or new upper dir", ErrRestoreTargetNotEmpty, dir, names[0])
	}
	return nil
}

// snapshotKeepsXattr reports whether the extended attribute name travels
// in snapshots and base images. Overlay's own bookkeeping that names
// inodes of one particular filesystem (origin, impure, nlink, upper,
// uuid) is dropped: it is a cache the kernel rebuilds, and a stale file
// handle from another filesystem would only confuse it.
func snapshotKeepsXattr(name string) bool {
	for _, prefix := range []string{"trusted.overlay.", "user.overlay."} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			switch rest {
			case "opaque", "redirect", "metacopy", "whiteout", "whiteouts":
				return true
			}
			return false
		}
	}
	switch {
	case strings.HasPrefix(name, "user."):
		return true
	case name == "security.capability",
		name == "system.posix_acl_access",
		name == "system.posix_acl_default":
		return true
	}
	return false
}

// snapshotArchiver writes a directory tree into a tar stream.
type snapshotArchiver struct {
	tw *tar.Writer
	// keepWhiteouts keeps character devices 0:0 (overlay whiteouts); when
	// false every device node is skipped (base images get their /dev
	// from the box).
	keepWhiteouts bool
	links         map[snapshotInodeID]string
	buf           []byte
	xattrNames    []byte
	xattrValue    []byte
}

// snapshotInodeID identifies an inode for hardlink detection.
type snapshotInodeID struct{ dev, ino uint64 }

func newSnapshotArchiver(w io.Writer, keepWhiteouts bool) *snapshotArchiver {
	return &snapshotArchiver{
		tw:            tar.NewWriter(w),
		keepWhiteouts: keepWhiteouts,
		links:         map[snapshotInodeID]string{},
		buf:           make([]byte, snapshotCopyBufferSize),
		xattrNames:    make([]byte, 4096),
		xattrValue:    make([]byte, 4096),
	}
}

// addTree archives root and everything below it in lexical order.
func (a *snapshotArchiver) addTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := "./"
		if path != root {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			name = filepath.ToSlash(rel)
		}
		return a.addEntry(path, name)
	})
}

// addEntry archives one filesystem object found at path under the archive
// name name.
func (a *snapshotArchiver) addEntry(path, name string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	hdr := &tar.Header{
		Name:    name,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Format:  tar.FormatPAX,
	}
	regular := false
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		hdr.Typeflag = tar.TypeDir
		if name != "./" {
			hdr.Name = name + "/"
		}
	case unix.S_IFREG:
		id := snapshotInodeID{dev: st.Dev, ino: st.Ino}
		if first, seen := a.links[id]; seen && st.Nlink > 1 {
			hdr.Typeflag = tar.TypeLink
			hdr.Linkname = first
			break
		}
		if st.Nlink > 1 {
			a.links[id] = name
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = st.Size
		regular = true
	case unix.S_IFLNK:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
	case unix.S_IFCHR:
		if !a.keepWhiteouts || st.Rdev != 0 {
			return nil
		}
		hdr.Typeflag = tar.TypeChar
	case unix.S_IFIFO:
		hdr.Typeflag = tar.TypeFifo
	default: // block devices, sockets
		return nil
	}
	if err := a.addXattrs(path, hdr); err != nil {
		return err
	}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if regular && hdr.Size > 0 {
		return a.copyFile(path, hdr.Size)
	}
	return nil
}

// copyFile appends exactly size bytes of the file at path.
func (a *snapshotArchiver) copyFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// The anonymous wrappers hide WriterTo/ReaderFrom so the large buffer
	// is used instead of io.Copy's 32 KiB one.
	n, err := io.CopyBuffer(struct{ io.Writer }{a.tw}, struct{ io.Reader }{io.LimitReader(f, size)}, a.buf)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n != size {
		return fmt.Errorf("%s: file shrank from %d to %d bytes while snapshotting; stop or freeze the box first", path, size, n)
	}
	return nil
}

// addXattrs copies the kept extended attributes of path into hdr's PAX
// records.
func (a *snapshotArchiver) addXattrs(path string, hdr *tar.Header) error {
	names, err := snapshotListXattrs(path, &a.xattrNames)
	if err != nil {
		return err
	}
	for _, attr := range names {
		if !snapshotKeepsXattr(attr) {
			continue
		}
		value, err := snapshotGetXattr(path, attr, &a.xattrValue)
		if errors.Is(err, unix.ENODATA) {
			continue
		}
		if err != nil {
			return err
		}
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = map[string]string{}
		}
		hdr.PAXRecords[snapshotPAXXattrPrefix+attr] = string(value)
	}
	return nil
}

// snapshotListXattrs returns the xattr names of path (not following symlinks),
// growing *buf as needed.
func snapshotListXattrs(path string, buf *[]byte) ([]string, error) {
	for {
		n, err := unix.Llistxattr(path, *buf)
		if errors.Is(err, unix.ERANGE) {
			*buf = make([]byte, 2*len(*buf))
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, &os.PathError{Op: "llistxattr", Path: path, Err: err}
		}
		var names []string
		for _, name := range strings.Split(string((*buf)[:n]), "\x00") {
			if name != "" {
				names = append(names, name)
			}
		}
		return names, nil
	}
}

// snapshotGetXattr returns the value of attribute attr of path (not following
// symlinks), growing *buf as needed. The result aliases *buf.
func snapshotGetXattr(path, attr string, buf *[]byte) ([]byte, error) {
	for {
		n, err := unix.Lgetxattr(path, attr, *buf)
		if errors.Is(err, unix.ERANGE) {
			*buf = make([]byte, 2*len(*buf))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("lgetxattr %s %s: %w", path, attr, err)
		}
		return (*buf)[:n], nil
	}
}
