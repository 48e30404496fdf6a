package snapshot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// treeSize is what a tree takes on its file system: bytes of allocated
// blocks and inodes.
type treeSize struct{ bytes, inodes int64 }

// blockCounter is a fileTarget that allocates nothing: it adds up the
// blocks a sparseWriter would have written.
type blockCounter struct{ bytes int64 }

func (c *blockCounter) WriteAt(p []byte, _ int64) (int, error) {
	c.bytes += (int64(len(p)) + holeBlock - 1) / holeBlock * holeBlock
	return len(p), nil
}

func (c *blockCounter) Truncate(int64) error { return nil }

// archiveSize reads a snapshot archive (zstd tar) and returns what
// restoring it takes: the data blocks its regular files allocate when
// written sparsely, a block per directory and symlink, an inode per entry.
func archiveSize(r io.Reader) (treeSize, error) {
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return treeSize{}, err
	}
	defer dec.Close()
	tr := tar.NewReader(dec)
	buf := make([]byte, copyBufferSize)
	var size treeSize
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return size, nil
		}
		if err != nil {
			return treeSize{}, err
		}
		size.inodes++
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeGNUSparse:
			counter := &blockCounter{}
			w := &sparseWriter{f: counter}
			if err := w.copyFrom(tr, buf); err != nil {
				return treeSize{}, err
			}
			if err := w.finish(); err != nil {
				return treeSize{}, err
			}
			size.bytes += counter.bytes
		case tar.TypeDir, tar.TypeSymlink:
			size.bytes += holeBlock
		}
	}
}

// usedBy returns what the tree at dir allocates (each inode once).
func usedBy(dir string) (treeSize, error) {
	var size treeSize
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		if seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		size.inodes++
		size.bytes += st.Blocks * 512
		return nil
	})
	return size, err
}

// checkRoomWithoutOld reports whether the file system of upperDir can
// hold a restore of need once the tree at upperDir is removed (fits). It
// is asked before the old tree is removed to make room: when the answer
// is no, the box keeps its files.
func checkRoomWithoutOld(upperDir string, need treeSize) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(upperDir), &sfs); err != nil {
		return &os.PathError{Op: "statfs", Path: filepath.Dir(upperDir), Err: err}
	}
	old, err := usedBy(upperDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if !fits(&sfs, need, old) {
		freeBytes, freeInodes := int64(sfs.Bavail)*sfs.Bsize+old.bytes, int64(sfs.Ffree)+old.inodes
		return fmt.Errorf("%w: the snapshot needs about %d MiB and %d files, more than this box's %d MiB layer can hold (%d MiB and %d files free even without the files it has now, which are kept); restore it into a new box with a larger layer: set terminal.container_disk (MiB) above that, then run hermes box restore SNAPSHOT --task NEW",
			unix.ENOSPC, withMargin(need)>>20, need.inodes, (int64(sfs.Blocks)*sfs.Bsize)>>20, freeBytes>>20, freeInodes)
	}
	return nil
}

// tightFactor: a layer with less than this many times the compressed
// archive's bytes free may lack room for the restored tree beside the old
// one, so its size is read before the extraction (see replaceUpper).
const tightFactor = 4

// freeRoom returns the bytes free to unprivileged writers on the file
// system of dir.
func freeRoom(dir string) (int64, bool) {
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil {
		return 0, false
	}
	return int64(sfs.Bavail) * sfs.Bsize, true
}

// fitsBeside reports whether the file system of dir has room for need
// now, with the margin checkRoomWithoutOld keeps.
func fitsBeside(dir string, need treeSize) bool {
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil {
		return true // unknown: try, the extraction reports ENOSPC
	}
	return fits(&sfs, need, treeSize{})
}

// fits reports whether need fits the free space of sfs plus freed (a tree
// that is to be removed first), with withMargin's margin; a file system
// that counts no inodes (sfs.Files 0) has no inode limit.
func fits(sfs *unix.Statfs_t, need, freed treeSize) bool {
	return withMargin(need) <= int64(sfs.Bavail)*sfs.Bsize+freed.bytes &&
		(sfs.Files == 0 || need.inodes <= int64(sfs.Ffree)+freed.inodes)
}

// withMargin is the bytes a restore of need is given room for: 5 % and
// 1 MiB more, for what the estimate leaves out (extent trees, directory
// growth).
func withMargin(need treeSize) int64 { return need.bytes + need.bytes/20 + 1<<20 }
