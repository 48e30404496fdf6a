package snapshot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ExtractPolicy says which entries an extraction keeps.
type ExtractPolicy struct {
	// keepWhiteouts recreates character devices 0:0 (overlay whiteouts)
	// and rejects any other device node. When false (base images) all
	// device nodes are skipped: the box mounts its own /dev.
	keepWhiteouts bool
	// fromBox marks an archive a box wrote (a snapshot being restored):
	// setuid and setgid bits and security.capability are dropped, and
	// overlay redirect or metacopy xattrs, which can make a layer show
	// files from outside itself, refuse the archive (sanitizeHeader).
	fromBox bool
}

// sanitizeHeader applies the fromBox policy to hdr before anything is
// created from it.
func sanitizeHeader(hdr *tar.Header) error {
	hdr.Mode &^= unix.S_ISUID | unix.S_ISGID
	for key, value := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(key, paxXattrPrefix)
		if !ok {
			continue
		}
		if attr == "security.capability" {
			delete(hdr.PAXRecords, key)
			continue
		}
		for _, prefix := range []string{"trusted.overlay.", "user.overlay."} {
			rest, ok := strings.CutPrefix(attr, prefix)
			if !ok {
				continue
			}
			switch {
			case rest == "opaque" && (value == "y" || value == "x"), (rest == "whiteout" || rest == "whiteouts") && value == "y":
			default:
				return fmt.Errorf("archive entry %q carries %s=%q, which could expose files outside the layer; the snapshot was altered or comes from elsewhere, so it is refused", hdr.Name, attr, value)
			}
		}
	}
	return nil
}

// inlineFileLimit is the largest regular file handed to an
// extraction worker with its contents in memory (16 MiB); bigger files are
// streamed by the reading goroutine.
const inlineFileLimit = 4 << 20

// inlineBudget bounds the file contents queued for the workers
// and not yet written (64 MiB); the reading goroutine waits for the
// workers past it.
const inlineBudget = 64 << 20

// dirFDLimit caps the directory descriptors an extraction keeps
// open; past it the cache is emptied once the workers are idle.
const dirFDLimit = 512

// extractor writes tar entries below one root directory using only
// *at system calls on directory descriptors opened component by component
// with O_NOFOLLOW, so no entry can write outside the root.
//
// Creating inodes dominates restore time on small files, so leaf entries
// (small files, symlinks, whiteouts, fifos) are created by GOMAXPROCS
// worker goroutines, one per directory at a time, while the caller's
// goroutine decompresses, parses and makes directories; hardlinks wait
// until the workers are done.
type extractor struct {
	root       string
	rootFD     int
	policy     ExtractPolicy
	chown      bool // false when not root: ownership cannot be given away
	ownerKnown bool // new inodes get euid/egid, so equal owners need no chown
	euid, egid int
	umask      uint32
	buf        []byte
	dirFDs     map[string]int // open descriptors of directories by relative path
	dirs       []*tar.Header  // directory metadata applied at the end
	links      []*tar.Header  // hardlinks made after the leaves exist
	jobs       []chan leafJob // one queue per worker, chosen by parent directory
	workers    sync.WaitGroup
	pending    sync.WaitGroup  // queued leaves not yet created
	leaves     map[string]bool // names handed to workers
	errMu      sync.Mutex
	err        error
	bufs       bufferPool
}

// leafJob is one leaf entry for a worker; data holds a regular
// file's contents.
type leafJob struct {
	parent     int
	name, base string
	hdr        *tar.Header
	data       []byte
}

// ExtractTree extracts the tar stream r below the existing
// directory root.
func ExtractTree(r io.Reader, root string, policy ExtractPolicy) (err error) {
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	x := &extractor{
		root:   root,
		rootFD: rootFD,
		policy: policy,
		chown:  os.Geteuid() == 0,
		euid:   os.Geteuid(),
		egid:   os.Getegid(),
		umask:  processUmask(),
		buf:    make([]byte, copyBufferSize),
		dirFDs: map[string]int{},
		leaves: map[string]bool{},
		bufs:   newBufferPool(inlineBudget),
	}
	var st unix.Stat_t
	if unix.Fstat(rootFD, &st) == nil && st.Mode&unix.S_ISGID == 0 {
		x.ownerKnown = true // every other dir is made by us without setgid until finishDirs
	}
	defer x.close()
	for range runtime.GOMAXPROCS(0) {
		queue := make(chan leafJob, 256)
		x.jobs = append(x.jobs, queue)
		x.workers.Add(1)
		go x.work(queue)
	}
	err = x.readAll(tar.NewReader(r))
	for _, queue := range x.jobs {
		close(queue)
	}
	x.workers.Wait()
	if err == nil {
		err = x.firstErr()
	}
	if err != nil {
		return err
	}
	for _, hdr := range x.links {
		if err := x.makeLink(hdr); err != nil {
			return err
		}
	}
	return x.finishDirs()
}

func (x *extractor) readAll(tr *tar.Reader) error {
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		if err := x.extract(hdr, tr); err != nil {
			return err
		}
		if err := x.firstErr(); err != nil {
			return err
		}
	}
}

func (x *extractor) work(queue <-chan leafJob) {
	defer x.workers.Done()
	for job := range queue {
		if x.firstErr() == nil {
			if err := x.createLeaf(job); err != nil {
				x.fail(err)
			}
		}
		if job.data != nil {
			x.bufs.put(job.data)
		}
		x.pending.Done()
	}
}

func (x *extractor) fail(err error) {
	x.errMu.Lock()
	defer x.errMu.Unlock()
	if x.err == nil {
		x.err = err
	}
}

func (x *extractor) firstErr() error {
	x.errMu.Lock()
	defer x.errMu.Unlock()
	return x.err
}

func (x *extractor) close() {
	for _, fd := range x.dirFDs {
		unix.Close(fd)
	}
	unix.Close(x.rootFD)
}

// trimDirFDs closes every cached directory descriptor once there are
// dirFDLimit of them, after waiting for the workers that may use
// them. It runs only between entries, never while a caller holds one.
func (x *extractor) trimDirFDs() {
	if len(x.dirFDs) < dirFDLimit {
		return
	}
	x.pending.Wait()
	for rel, fd := range x.dirFDs {
		unix.Close(fd)
		delete(x.dirFDs, rel)
	}
}

// processUmask returns the process umask from /proc/self/status (reading
// it with umask(2) would change it for every goroutine); 022 if unknown.
func processUmask() uint32 {
	data, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(m)
				}
			}
		}
	}
	return 0o022
}

// entryName validates a tar entry name and returns it relative to the
// root ("." for the root itself). Absolute names and ".." components are
// errors.
func entryName(name string) (string, error) {
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

// extract creates a directory, queues a leaf for the workers, streams a
// large file, or records a hardlink for later.
func (x *extractor) extract(hdr *tar.Header, body io.Reader) error {
	name, err := entryName(hdr.Name)
	if err != nil {
		return err
	}
	if x.policy.fromBox {
		if err := sanitizeHeader(hdr); err != nil {
			return err
		}
	}
	if name == "." {
		if hdr.Typeflag != tar.TypeDir {
			return fmt.Errorf("archive entry %q names the target root but is not a directory", hdr.Name)
		}
		hdr.Name = "."
		x.dirs = append(x.dirs, hdr)
		return nil
	}
	x.trimDirFDs()
	dir, base := path.Split(name)
	parent, err := x.dirFD(path.Clean(dir))
	if err != nil {
		return err
	}
	job := leafJob{parent: parent, name: name, base: base, hdr: hdr}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.makeDir(parent, name, base, hdr)
	case tar.TypeReg, tar.TypeGNUSparse:
		if hdr.Size > inlineFileLimit {
			x.settle(name)
			return x.writeFile(job, body)
		}
		if hdr.Size == 0 {
			break
		}
		job.data = x.bufs.get(int(hdr.Size))
		if _, err := io.ReadFull(body, job.data); err != nil {
			x.bufs.put(job.data)
			return fmt.Errorf("read archive entry %q: %w", hdr.Name, err)
		}
	case tar.TypeLink:
		if _, err := entryName(hdr.Linkname); err != nil {
			return fmt.Errorf("hardlink %q: %w", hdr.Name, err)
		}
		hdr.Name = name
		x.links = append(x.links, hdr)
		return nil
	case tar.TypeChar, tar.TypeBlock:
		if !x.policy.keepWhiteouts {
			return nil
		}
		if hdr.Typeflag != tar.TypeChar || hdr.Devmajor != 0 || hdr.Devminor != 0 {
			return fmt.Errorf("archive entry %q is a device node %d:%d; snapshots only carry overlay whiteouts (0:0)", hdr.Name, hdr.Devmajor, hdr.Devminor)
		}
	case tar.TypeSymlink, tar.TypeFifo:
	default:
		return fmt.Errorf("archive entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
	}
	x.settle(name)
	x.leaves[name] = true
	x.pending.Add(1)
	// All leaves of one directory go to the same worker: creations in
	// one directory serialize on its inode lock, and contending for it
	// costs more than it gains.
	x.jobs[parent%len(x.jobs)] <- job
	return nil
}

// settle waits for the workers when name was handed to them, so an entry
// that reuses a leaf's name (a directory over a symlink, a duplicate)
// sees it created, exactly as with sequential extraction.
func (x *extractor) settle(name string) {
	if x.leaves[name] {
		x.pending.Wait()
	}
}

// createLeaf makes one non-directory entry; it runs on a worker.
func (x *extractor) createLeaf(job leafJob) error {
	hdr, parent, base := job.hdr, job.parent, job.base
	var create func() error
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeGNUSparse:
		return x.writeFile(job, nil)
	case tar.TypeSymlink:
		create = func() error { return unix.Symlinkat(hdr.Linkname, parent, base) }
	case tar.TypeChar:
		create = func() error { return unix.Mknodat(parent, base, unix.S_IFCHR|uint32(hdr.Mode&0o7777), 0) }
	case tar.TypeFifo:
		create = func() error { return unix.Mknodat(parent, base, unix.S_IFIFO|uint32(hdr.Mode&0o7777), 0) }
	}
	if err := x.replaceable(parent, job.name, base, create); err != nil {
		return err
	}
	return x.applyMeta(parent, job.name, base, hdr, hdr.Typeflag == tar.TypeFifo)
}

// dirFD returns a descriptor for the directory rel below the root,
// creating missing components (0755). Every component is opened with
// O_NOFOLLOW|O_DIRECTORY from its already-open parent, so a symlink
// anywhere on the way is an error. Descriptors stay open (and owned by the
// extractor) until extraction ends; directories are never replaced, so
// they stay valid.
func (x *extractor) dirFD(rel string) (int, error) {
	if rel == "." {
		return x.rootFD, nil
	}
	if fd, ok := x.dirFDs[rel]; ok {
		return fd, nil
	}
	parentRel, part := path.Split(rel)
	parent, err := x.dirFD(path.Clean(parentRel))
	if err != nil {
		return -1, err
	}
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	x.settle(rel)
	fd, err := unix.Openat(parent, part, flags, 0)
	if errors.Is(err, unix.ENOENT) {
		if err = unix.Mkdirat(parent, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = unix.Openat(parent, part, flags, 0)
		}
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("archive path %q goes through %q, which is not a directory (a symlink or file); refusing to write through it", rel, part)
	}
	if err != nil {
		return -1, fmt.Errorf("open %s/%s: %w", x.root, rel, err)
	}
	x.dirFDs[rel] = fd
	return fd, nil
}

// replaceable runs create; if the name already exists as a non-directory
// it is unlinked (never followed) and create runs again, so a later entry
// wins as in tar(1).
func (x *extractor) replaceable(parent int, name, base string, create func() error) error {
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

func (x *extractor) makeDir(parent int, name, base string, hdr *tar.Header) error {
	x.settle(name)
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

// writeFile creates a regular file with job.data, or with the contents
// read from body when job.data is nil (large files).
func (x *extractor) writeFile(job leafJob, body io.Reader) error {
	hdr, parent, base := job.hdr, job.parent, job.base
	mode := uint32(hdr.Mode & 0o7777)
	var fd int
	if err := x.replaceable(parent, job.name, base, func() (err error) {
		fd, err = unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode&0o777)
		return err
	}); err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), x.root+"/"+job.name)
	sw := &sparseWriter{f: f}
	var err error
	if body != nil {
		err = sw.copyFrom(body, x.buf)
	} else if len(job.data) > 0 {
		_, err = sw.Write(job.data)
	}
	if err == nil {
		err = sw.finish()
	}
	if err == nil && x.needsChown(hdr) {
		err = f.Chown(hdr.Uid, hdr.Gid)
	}
	// After chown, which clears setuid/setgid bits; skipped when open(2)
	// already gave the exact mode.
	if err == nil && (mode&0o7000 != 0 || mode&x.umask != 0) {
		err = unix.Fchmod(fd, mode)
	}
	if err == nil {
		err = setXattrs(hdr, func(attr string, value []byte) error { return unix.Fsetxattr(fd, attr, value, 0) })
	}
	if err == nil {
		ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
		err = unix.UtimesNanoAt(fd, "", []unix.Timespec{ts, ts}, unix.AT_EMPTY_PATH)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var pathErr *os.PathError
	if err != nil && !errors.As(err, &pathErr) { // a PathError names the file already
		return fmt.Errorf("write %s/%s: %w", x.root, job.name, err)
	}
	return err
}

// needsChown reports whether an inode this extraction created must be
// given hdr's owner: only as root, and not when it already has it (new
// inodes get the euid/egid when no directory is setgid, see ownerKnown).
func (x *extractor) needsChown(hdr *tar.Header) bool {
	return x.chown && !(x.ownerKnown && hdr.Uid == x.euid && hdr.Gid == x.egid)
}

// makeLink creates the hardlink hdr.Name to hdr.Linkname, both resolved
// below the root without following symlinks.
func (x *extractor) makeLink(hdr *tar.Header) error {
	target, err := entryName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hardlink %q: %w", hdr.Name, err)
	}
	if target == "." {
		return fmt.Errorf("hardlink %q points at the target root", hdr.Name)
	}
	x.trimDirFDs()
	tdir, tbase := path.Split(target)
	tparent, err := x.dirFD(path.Clean(tdir))
	if err != nil {
		return fmt.Errorf("hardlink %q: %w", hdr.Name, err)
	}
	dir, base := path.Split(hdr.Name)
	parent, err := x.dirFD(path.Clean(dir))
	if err != nil {
		return err
	}
	return x.replaceable(parent, hdr.Name, base, func() error {
		return unix.Linkat(tparent, tbase, parent, base, 0)
	})
}

// applyMeta sets owner, xattrs, mode (when chmod) and times of a
// non-regular entry without following it.
func (x *extractor) applyMeta(parent int, name, base string, hdr *tar.Header, chmod bool) error {
	if x.needsChown(hdr) {
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
func (x *extractor) finishDirs() error {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		hdr := x.dirs[i]
		x.trimDirFDs()
		fd, err := x.dirFD(hdr.Name)
		if err != nil {
			return err
		}
		if err := x.finishDir(fd, hdr); err != nil {
			return fmt.Errorf("directory %s/%s: %w", x.root, hdr.Name, err)
		}
	}
	return nil
}

func (x *extractor) finishDir(fd int, hdr *tar.Header) error {
	// The root existed before; every other directory was made by this
	// extraction and is owned by its euid/egid.
	if x.chown && (hdr.Name == "." || x.needsChown(hdr)) {
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
		if !ok || !keepsXattr(attr) {
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
