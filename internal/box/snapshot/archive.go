package snapshot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// copyBufferSize is the buffer used to move file contents in and
// out of snapshot archives (1 MiB: large enough that a 50 MB upper layer
// needs few read/write calls per big file).
const copyBufferSize = 1 << 20

// paxXattrPrefix is the PAX record prefix for extended attributes
// used by GNU tar, bsdtar and Go's archive/tar ("SCHILY.xattr.<name>").
const paxXattrPrefix = "SCHILY.xattr."

// Archive writes the overlayfs upper directory upperDir to w as a
// tar archive (PAX format) compressed with zstd (RFC 8878) at the fastest
// level; files of 256 KiB or more whose first 64 KiB do not compress are
// stored in raw zstd frames instead. The output is one standard zstd
// stream: `zstd -dc SNAP.tar.zst | tar -tvf -` lists it.
//
// Kept per entry: regular files, directories, symlinks, hardlinks (as tar
// link entries to the first path seen), fifos, permission bits including
// setuid/setgid/sticky, numeric uid/gid, mtimes to the nanosecond, and the
// extended attributes listed by keepsXattr as PAX
// "SCHILY.xattr.*" records (trusted.overlay.opaque, user.*,
// security.capability, POSIX ACLs). Overlay whiteouts (character devices
// 0:0, see the kernel's Documentation/filesystems/overlayfs.rst) are kept
// as tar character-device entries. Other device nodes and sockets cannot
// be created in a box and are skipped.
//
// The walk never follows symlinks (see addTree), so the box cannot make
// the host read files outside upperDir into a snapshot. The box must
// still be stopped or frozen while the snapshot runs; an entry that
// changes meanwhile makes Archive fail. The root of the archive is
// the entry "./" carrying upperDir's own metadata.
func Archive(upperDir string, w io.Writer) error {
	enc, err := newZstdWriter(w)
	if err != nil {
		return fmt.Errorf("snapshot %s: start zstd: %w", upperDir, err)
	}
	tw := newArchiver(enc, true)
	tw.zw = enc
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

// PackTree writes root as an uncompressed tar stream to w, walked as
// Archive walks an upper (no symlink followed, hardlinks kept, xattrs as
// PAX records) but with every device node skipped: base images get their
// /dev from the box. The caller compresses w as it likes.
func PackTree(root string, w io.Writer) error {
	a := newArchiver(w, false)
	if err := a.addTree(root); err != nil {
		return fmt.Errorf("pack %s: %w", root, err)
	}
	return a.tw.Close()
}

// Restore extracts an archive written by Archive, read from r into upperDir,
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
func Restore(r io.Reader, upperDir string) error {
	return restore(r, upperDir, true)
}

// restore is Restore; frameChecksums false skips the zstd
// frames' xxhash checks, for callers that check the whole archive's
// sha256 and discard the tree when it differs (Store).
func restore(r io.Reader, upperDir string, frameChecksums bool) error {
	if err := ensureEmptyDir(upperDir); err != nil {
		return err
	}
	// Decoding in this goroutine costs ~8% less CPU than the library's
	// asynchronous stream decoder (BenchmarkRestore50MB); the extraction
	// workers already keep the other cores busy creating files.
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.IgnoreChecksum(!frameChecksums))
	if err != nil {
		return fmt.Errorf("restore into %s: start zstd: %w", upperDir, err)
	}
	defer dec.Close()
	if err := ExtractTree(dec, upperDir, ExtractPolicy{keepWhiteouts: true, fromBox: true}); err != nil {
		return fmt.Errorf("restore into %s: %w", upperDir, err)
	}
	return nil
}

// ensureEmptyDir creates dir (0755, with parents) or checks that
// it is an empty directory.
func ensureEmptyDir(dir string) error {
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

// keepsXattr reports whether the extended attribute name travels
// in snapshots and base images. Overlay's own bookkeeping that names
// inodes of one particular filesystem (origin, impure, nlink, upper,
// uuid) is dropped: it is a cache the kernel rebuilds, and a stale file
// handle from another filesystem would only confuse it. Redirects and
// metacopy are dropped too: boxes mount overlays with
// overlaySafeOptions, so the kernel ignores them, and a restore refuses
// them (sanitizeHeader).
func keepsXattr(name string) bool {
	for _, prefix := range []string{"trusted.overlay.", "user.overlay."} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			switch rest {
			case "opaque", "whiteout", "whiteouts":
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

// archiver writes a directory tree into a tar stream.
type archiver struct {
	tw *tar.Writer
	// keepWhiteouts keeps character devices 0:0 (overlay whiteouts); when
	// false every device node is skipped (base images get their /dev
	// from the box).
	keepWhiteouts bool
	links         map[inodeID]string
	// zw, when set, lets large incompressible files bypass compression.
	zw         *zstdWriter
	probe      compressProbe
	buf        []byte
	xattrNames []byte
	xattrValue []byte
}

// inodeID identifies an inode for hardlink detection.
type inodeID struct{ dev, ino uint64 }

func newArchiver(w io.Writer, keepWhiteouts bool) *archiver {
	return &archiver{
		tw:            tar.NewWriter(w),
		keepWhiteouts: keepWhiteouts,
		links:         map[inodeID]string{},
		buf:           make([]byte, copyBufferSize),
		xattrNames:    make([]byte, 4096),
		xattrValue:    make([]byte, 4096),
	}
}

// addTree archives root and everything below it in lexical order. The
// walk never follows a symlink: each directory is opened with
// openat(O_NOFOLLOW|O_DIRECTORY) from its already-open parent and each
// file with openat(O_NOFOLLOW), so a box that swaps a directory for a
// symlink to a host path cannot pull host files into its snapshot.
func (a *archiver) addTree(root string) error {
	dir, err := os.Open(root)
	if err != nil {
		return err
	}
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: root, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", root)
	}
	hdr := tarHeader("./", &st)
	hdr.Typeflag = tar.TypeDir
	if err := a.addXattrs(xattrSource{fd: int(dir.Fd())}, hdr); err != nil {
		return err
	}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return err
	}
	return a.addDir(dir, root, "")
}

// tarHeader starts a PAX header for an inode: name, permission bits
// with setuid/setgid/sticky, numeric owner and mtime to the nanosecond.
func tarHeader(name string, st *unix.Stat_t) *tar.Header {
	return &tar.Header{
		Name:    name,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Format:  tar.FormatPAX,
	}
}

// addDir archives the entries of the open directory dir (host path
// dirPath, archive prefix prefix) and recurses into subdirectories.
func (a *archiver) addDir(dir *os.File, dirPath, prefix string) error {
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("read directory %s: %w", dirPath, err)
	}
	slices.SortFunc(entries, func(x, y os.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })
	dirFD := int(dir.Fd())
	for _, e := range entries {
		if err := a.addEntry(dirFD, dirPath, prefix, e.Name(), e.Type()); err != nil {
			return err
		}
	}
	return nil
}

// changedDuringWalk describes an entry that changed under the walk.
func changedDuringWalk(path string, err error) error {
	return fmt.Errorf("%s: %v (did it change during the snapshot? stop or freeze the box first)", path, err)
}

// addEntry archives the entry base (of type typ as listed) of the
// directory open as dirFD. Directories and regular files are opened first
// (O_NOFOLLOW) and described by fstat of what was opened, so the inode
// archived is the inode read.
func (a *archiver) addEntry(dirFD int, dirPath, prefix, base string, typ os.FileMode) error {
	path := dirPath + "/" + base
	name := prefix + base
	var st unix.Stat_t
	fd := -1
	switch typ {
	case os.ModeDir, 0:
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
		if typ == os.ModeDir {
			flags |= unix.O_DIRECTORY
		}
		var err error
		if fd, err = unix.Openat(dirFD, base, flags, 0); err != nil {
			return changedDuringWalk(path, err)
		}
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return changedDuringWalk(path, err)
		}
		want := uint32(unix.S_IFREG)
		if typ == os.ModeDir {
			want = unix.S_IFDIR
		}
		if st.Mode&unix.S_IFMT != want {
			unix.Close(fd)
			return changedDuringWalk(path, errors.New("type changed"))
		}
	default:
		if err := unix.Fstatat(dirFD, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return changedDuringWalk(path, err)
		}
	}
	hdr := tarHeader(name, &st)
	if kind := st.Mode & unix.S_IFMT; fd < 0 && (kind == unix.S_IFDIR || kind == unix.S_IFREG) {
		return changedDuringWalk(path, errors.New("type changed"))
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		child := os.NewFile(uintptr(fd), path)
		defer child.Close()
		hdr.Typeflag = tar.TypeDir
		hdr.Name = name + "/"
		if err := a.addXattrs(xattrSource{fd: fd}, hdr); err != nil {
			return err
		}
		if err := a.tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return a.addDir(child, path, name+"/")
	case unix.S_IFREG:
		f := os.NewFile(uintptr(fd), path)
		defer f.Close()
		id := inodeID{dev: st.Dev, ino: st.Ino}
		if first, seen := a.links[id]; seen && st.Nlink > 1 {
			hdr.Typeflag = tar.TypeLink
			hdr.Linkname = first
			return a.tw.WriteHeader(hdr)
		}
		if st.Nlink > 1 {
			a.links[id] = name
		}
		return a.addFile(f, hdr, st.Size)
	case unix.S_IFLNK:
		target, err := readlinkat(dirFD, base)
		if err != nil {
			return changedDuringWalk(path, err)
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
	// Entries that are not opened take their xattrs through the parent's
	// /proc magic link plus one component (never followed).
	byPath := xattrSource{path: "/proc/self/fd/" + strconv.Itoa(dirFD) + "/" + base}
	if err := a.addXattrs(byPath, hdr); err != nil {
		return err
	}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// addFile archives the open regular file f of size bytes.
func (a *archiver) addFile(f *os.File, hdr *tar.Header, size int64) error {
	path := f.Name()
	hdr.Typeflag = tar.TypeReg
	hdr.Size = size
	if err := a.addXattrs(xattrSource{fd: int(f.Fd())}, hdr); err != nil {
		return err
	}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if size == 0 {
		return nil
	}
	raw := a.zw != nil && hdr.Size >= rawMinSize && a.probe.incompressible(f)
	if raw {
		if err := a.zw.SetRaw(true); err != nil {
			return err
		}
	}
	// The anonymous wrappers hide WriterTo/ReaderFrom so the large buffer
	// is used instead of io.Copy's 32 KiB one.
	var src io.Reader = io.LimitReader(f, hdr.Size)
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) == nil && st.Blocks*512 < size { // holes: not read
		src = &holeReader{f: f, size: size}
	}
	n, err := io.CopyBuffer(struct{ io.Writer }{a.tw}, struct{ io.Reader }{src}, a.buf)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // n tells how much there was
	}
	if raw && err == nil {
		err = a.zw.SetRaw(false)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n != hdr.Size {
		return fmt.Errorf("%s: file shrank from %d to %d bytes while snapshotting; stop or freeze the box first", path, hdr.Size, n)
	}
	return nil
}

// readlinkat returns the target of the symlink base in dirFD.
func readlinkat(dirFD int, base string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirFD, base, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// xattrSource names an inode for xattr calls: an open descriptor,
// or when path is set a path whose last component is not followed.
type xattrSource struct {
	fd   int
	path string
}

// addXattrs copies the kept extended attributes of src into hdr's PAX
// records.
func (a *archiver) addXattrs(src xattrSource, hdr *tar.Header) error {
	names, err := src.list(&a.xattrNames)
	if err != nil {
		return fmt.Errorf("%s: %w", hdr.Name, err)
	}
	for _, attr := range names {
		if !keepsXattr(attr) {
			continue
		}
		value, err := src.get(attr, &a.xattrValue)
		if errors.Is(err, unix.ENODATA) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = map[string]string{}
		}
		hdr.PAXRecords[paxXattrPrefix+attr] = string(value)
	}
	return nil
}

// list returns the xattr names of the source, growing *buf as needed.
func (s xattrSource) list(buf *[]byte) ([]string, error) {
	for {
		var n int
		var err error
		if s.path != "" {
			n, err = unix.Llistxattr(s.path, *buf)
		} else {
			n, err = unix.Flistxattr(s.fd, *buf)
		}
		if errors.Is(err, unix.ERANGE) {
			*buf = make([]byte, 2*len(*buf))
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listxattr: %w", err)
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

// get returns the value of attr, growing *buf as needed; the result
// aliases *buf.
func (s xattrSource) get(attr string, buf *[]byte) ([]byte, error) {
	for {
		var n int
		var err error
		if s.path != "" {
			n, err = unix.Lgetxattr(s.path, attr, *buf)
		} else {
			n, err = unix.Fgetxattr(s.fd, attr, *buf)
		}
		if errors.Is(err, unix.ERANGE) {
			*buf = make([]byte, 2*len(*buf))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("getxattr %s: %w", attr, err)
		}
		return (*buf)[:n], nil
	}
}

// listXattrs returns the xattr names of path (not following a
// final symlink), growing *buf as needed.
func listXattrs(path string, buf *[]byte) ([]string, error) {
	return xattrSource{path: path}.list(buf)
}

// getXattr returns attribute attr of path (not following a final
// symlink); the result aliases *buf.
func getXattr(path, attr string, buf *[]byte) ([]byte, error) {
	return xattrSource{path: path}.get(attr, buf)
}
