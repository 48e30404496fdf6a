package box

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// diskTemplateDir holds one freshly made ext4 image per layer size, under
// HERMES_HOME/boxes (its leading dot keeps it out of the task ids).
const diskTemplateDir = ".disk-templates"

// ensureDiskImage creates the ext4 image of a persistent box's writable
// layer (sparse, sizeMiB MiB) at path if it is missing. mkfs.ext4 runs
// once per size, into a template under HERMES_HOME/boxes/.disk-templates;
// each new box gets a copy of it: a reflink where the file system has them
// (FICLONE), else a sparse copy of its data extents (SEEK_DATA/SEEK_HOLE +
// copy_file_range(2)). A fresh 50 GiB image holds about 630 KB of
// metadata (see makeExt4Image), so the copy takes well under a ms where
// mkfs takes 15–30 ms. The copies share
// the template's file system UUID, which ext4 allows.
func (m *Manager) ensureDiskImage(path string, sizeMiB int) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmpl, err := m.diskTemplate(sizeMiB)
	if err != nil {
		return err
	}
	if err := copySparse(tmpl, path); err != nil {
		return fmt.Errorf("box disk image %s from %s: %w", path, tmpl, err)
	}
	return nil
}

// diskTemplate returns the template image of sizeMiB, making it first if
// needed.
func (m *Manager) diskTemplate(sizeMiB int) (string, error) {
	dir := filepath.Join(m.opts.Home, "boxes", diskTemplateDir)
	// "-v2": made without resize_inode (makeExt4Image); templates of the
	// older layout are not reused.
	path := filepath.Join(dir, "ext4-"+strconv.Itoa(sizeMiB)+"m-v2.img")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("box disk template dir: %w", err)
	}
	return path, makeExt4Image(path, sizeMiB)
}

// makeExt4Image runs mkfs.ext4 on a new sparse file of sizeMiB and renames
// it to path once complete (concurrent makers each use their own temp).
func makeExt4Image(path string, sizeMiB int) error {
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return errors.New("box: persistent boxes keep their layer in an ext4 image and need mkfs.ext4: install e2fsprogs (apt-get install e2fsprogs), or set terminal.container_persistent: false")
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("box disk image: %w", err)
	}
	tmp := f.Name()
	err = f.Truncate(int64(sizeMiB) << 20)
	f.Close()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("box disk image %s: %w", tmp, err)
	}
	// nodiscard: the file is a fresh sparse one, punching it is wasted work.
	// ^resize_inode: no GDT blocks reserved for growing the file system
	// online (a layer keeps its size); for 50 GiB they were 4.1 of the
	// image's 4.7 MB of data, which every new box copies, and which the
	// loop device's attach writes back to disk first (3.5 ms here).
	out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", "-O", "^resize_inode",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", tmp).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("box: mkfs.ext4 %s: %v: %s", tmp, err, strings.TrimSpace(string(out)))
	}
	return os.Rename(tmp, path)
}

// copySparse copies src to dst keeping holes: a reflink when the file
// system supports it, else only src's data extents. dst appears complete
// or not at all (temp file in its directory, fsync, rename).
func copySparse(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out.Name())
		}
	}()
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) != nil {
		if err := copyDataExtents(in, out, st.Size()); err != nil {
			return err
		}
	}
	if err := out.Chmod(0o600); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	return os.Rename(out.Name(), dst)
}

// copyDataExtents copies the data regions of in (size bytes) to the same
// offsets of out and sizes out to size, leaving holes as holes.
func copyDataExtents(in, out *os.File, size int64) error {
	if err := out.Truncate(size); err != nil {
		return err
	}
	ifd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(ifd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return fmt.Errorf("seek data: %w", err)
		}
		hole, err := unix.Seek(ifd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("seek hole: %w", err)
		}
		if err := copyRange(in, out, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// copyRange copies n bytes at off from in to the same offset of out, in
// the kernel when it can (copy_file_range(2)), else through a buffer.
func copyRange(in, out *os.File, off, n int64) error {
	roff, woff := off, off
	for n > 0 {
		c, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(min(n, 1<<30)), 0)
		if err != nil || c == 0 {
			break // not supported across these files: copy the rest by hand
		}
		n -= int64(c)
	}
	if n == 0 {
		return nil
	}
	_, err := io.Copy(io.NewOffsetWriter(out, woff), io.NewSectionReader(in, roff, n))
	return err
}
