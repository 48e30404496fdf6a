package snapshot

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// replaceSuffix marks the sibling directory a restore extracts
// into before it takes upperDir's place (upperDir + suffix + 6 hex).
const replaceSuffix = ".restore-"

// ReplaceUpper puts snapshot id in place of upperDir's contents, so that a
// crash at any point leaves either the old tree or the complete new one:
// the archive is extracted into a sibling directory (upperDir.restore-*)
// and its sha256 checked against the manifest, the file system is flushed
// once (syncfs(2); no fsync per file), the new tree is exchanged with
// upperDir (renameat2 RENAME_EXCHANGE, or a rename when upperDir does not
// exist) and the parent directory synced, and only then is the old tree
// removed. Any error before the exchange leaves upperDir untouched, except
// running out of room: when the layer cannot hold both trees but can hold
// the new one alone, the old one is removed first and the extraction runs
// again (not crash-safe, as restores were before); when it cannot hold the
// new one alone either, nothing is changed.
// Directories left by an interrupted ReplaceUpper are removed first.
func (s *Store) ReplaceUpper(id, upperDir string) (Manifest, error) {
	m, err := s.Get(id)
	if err != nil {
		return Manifest{}, err
	}
	err = replaceUpper(upperDir, func(tmp string) error {
		f, err := os.Open(s.ArchivePath(id))
		if err != nil {
			return err
		}
		defer f.Close()
		sum := sha256.New()
		if err := restore(io.TeeReader(f, sum), tmp, false); err != nil { // the sha256 covers the archive
			if errors.Is(err, unix.ENOSPC) {
				// Out of room, replaceUpper removes the old tree and
				// tries again: only for an intact archive.
				if derr := checkDigest(f, sum, m.SHA256); derr != nil {
					return derr
				}
			}
			return err
		}
		return checkDigest(f, sum, m.SHA256)
	}, func() (treeSize, error) {
		// Asked before the old tree is removed: the archive's digest
		// is checked too (the old tree is never removed for a corrupt
		// archive).
		f, err := os.Open(s.ArchivePath(id))
		if err != nil {
			return treeSize{}, err
		}
		defer f.Close()
		sum := sha256.New()
		size, err := archiveSize(io.TeeReader(f, sum))
		if derr := checkDigest(f, sum, m.SHA256); derr != nil {
			return treeSize{}, derr // names the cause of a decoding error too
		}
		return size, err
	}, m.Size)
	if err != nil {
		return Manifest{}, fmt.Errorf("restore snapshot %s: %w", id, err)
	}
	return m, nil
}

// replaceUpper runs restore on a new sibling directory of upperDir and,
// when it succeeds, makes that directory upperDir durably (see
// ReplaceUpper). size says what the restored tree takes; it is asked only
// when the layer may have no room for both trees: before the first
// extraction when the layer has less than tightFactor times hint
// (the compressed archive's bytes) free, so that a restore bound to fill
// the layer does not run until it is full first; else when the
// extraction ran out of room, before the old tree is removed.
func replaceUpper(upperDir string, restore func(tmp string) error, size func() (treeSize, error), hint int64) error {
	upperDir = filepath.Clean(upperDir)
	parent := filepath.Dir(upperDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	stale, _ := filepath.Glob(globEscape(upperDir) + replaceSuffix + "*")
	for _, dir := range stale {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s, left by an interrupted restore: %w", dir, err)
		}
	}
	var suffix [3]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	tmp := upperDir + replaceSuffix + hex.EncodeToString(suffix[:])
	var err error
	tight, known, need := false, false, treeSize{}
	if free, ok := freeRoom(parent); ok && hint > 0 && free < tightFactor*hint {
		if need, err = size(); err != nil {
			return err
		}
		known, tight = true, !fitsBeside(parent, need)
	}
	if !tight {
		err = restore(tmp)
	}
	if tight || err != nil {
		os.RemoveAll(tmp)
		if !tight && !errors.Is(err, unix.ENOSPC) {
			return err
		}
		// The layer has no room for the old tree and the new one at
		// once (a box using more than half its disk): replace it the
		// way restores did before they were crash-safe, removing the
		// old tree first, if the new one then fits.
		if !known {
			var serr error
			if need, serr = size(); serr != nil {
				return fmt.Errorf("%w (and reading the archive's size: %v)", err, serr)
			}
		}
		if err := checkRoomWithoutOld(upperDir, need); err != nil {
			return err
		}
		if err := os.RemoveAll(upperDir); err != nil {
			return fmt.Errorf("no room for the restored tree beside the old one, and removing the old one failed: %w", err)
		}
		if err := restore(tmp); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("%w (the old layer was removed first, for lack of room beside it: the box now starts empty)", err)
		}
	}
	if err := syncfs(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	exchanged := true
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, upperDir, unix.RENAME_EXCHANGE)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(upperDir); errors.Is(serr, fs.ErrNotExist) {
			exchanged = false
			err = unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, upperDir)
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("move the restored tree %s to %s: %w", tmp, upperDir, err)
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	if exchanged {
		// tmp now holds the old tree; a crash while removing it leaves
		// a stale directory the next restore removes.
		if err := os.RemoveAll(tmp); err != nil {
			return fmt.Errorf("remove the replaced tree %s: %w", tmp, err)
		}
	}
	return nil
}

// syncfs writes back every dirty inode and block of the file
// system holding dir (syncfs(2)): one flush for a whole restore.
func syncfs(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}

// syncDir fsyncs the directory dir, making a rename in it durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// globEscape escapes the filepath.Match metacharacters of s.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
