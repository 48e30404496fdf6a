package box

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/initproc"
)

// BoxInfo describes a box's state on disk.
type BoxInfo struct {
	Task       string
	Persistent bool  // has an ext4 layer image
	DiskBytes  int64 // bytes the layer image uses on the host (sparse)
	InUse      bool  // a hermes process runs (or snapshots) it now
	// RestoreOf is the snapshot id of a restore into this new box that
	// has not completed: still running when InUse, else interrupted (the
	// box is incomplete and refuses to start). "" for a whole box.
	RestoreOf string
}

// ListBoxes lists the boxes with state under HERMES_HOME/boxes, by task id.
func ListBoxes(home string) ([]BoxInfo, error) {
	entries, err := os.ReadDir(filepath.Join(home, "boxes"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []BoxInfo
	for _, e := range entries {
		if !e.IsDir() || checkTaskID(e.Name()) != nil {
			continue
		}
		dir := filepath.Join(home, "boxes", e.Name())
		info := BoxInfo{Task: e.Name()}
		var st unix.Stat_t
		if unix.Stat(filepath.Join(dir, "disk.img"), &st) == nil {
			info.Persistent, info.DiskBytes = true, st.Blocks*512
		}
		info.InUse = stateLocked(dir)
		info.RestoreOf = restoringFrom(dir)
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out, nil
}

// HasLayer reports whether the box of taskID has its persistent layer
// (the ext4 image of its writable files) on disk, so that starting it
// again brings its files back.
func (m *Manager) HasLayer(taskID string) bool {
	if checkTaskID(taskID) != nil {
		return false
	}
	st, err := os.Stat(filepath.Join(m.StateDir(taskID), "disk.img"))
	return err == nil && st.Mode().IsRegular()
}

// stateLocked reports whether a hermes process holds the state lock of
// dir. Unlike lockState it creates no lock file: a listing must not put
// files into a box directory another process is removing (its RemoveAll
// would fail with "directory not empty" and leave the box behind).
func stateLocked(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// WithUpper mounts the writable layer of the stopped persistent box
// taskID on the host and calls fn with its overlay upper directory (for
// snapshots and restores), then unmounts it. With create, a missing layer
// is made first (terminal.container_disk MiB). The box must not be running
// anywhere: its state lock is held meanwhile.
//
// The layer is a detached mount (mountLayerDetached), attached to no
// mount namespace: upperDir is a path through the mount's descriptor,
// /proc/self/fd/N/upper, which every thread of this process can use. When
// the process ends, killed or not, the descriptor closes, which unmounts
// the file system and frees the loop device; nothing stays mounted on the
// host. A disk image that is already attached and mounted elsewhere is
// refused (*LayerInUseError).
func (m *Manager) WithUpper(taskID string, create bool, fn func(upperDir string) error) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	if err := m.Stop(taskID); err != nil {
		return err
	}
	dir := m.StateDir(taskID)
	image := filepath.Join(dir, "disk.img")
	if _, err := os.Stat(image); err != nil {
		if !create {
			return fmt.Errorf("box %s has no persistent layer (%s): %w", taskID, image, fs.ErrNotExist)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	lock, err := lockState(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := m.ensureDiskImage(image, m.opts.Terminal.ContainerDisk); err != nil {
		return err
	}
	if err := awaitImageFree(image, layerReleaseWait); err != nil {
		return err
	}
	lm, err := mountLayerDetached(image)
	if err != nil {
		return err
	}
	defer func() {
		lm.Close() // unmounts: nothing else holds the mount
		waitLoopReleased(image, layerReleaseWait)
	}()
	if err := removeStaleRestores(initproc.FDPath(lm.fd)); err != nil {
		return err
	}
	upper := filepath.Join(initproc.FDPath(lm.fd), "upper")
	if err := os.MkdirAll(upper, 0o755); err != nil {
		return err
	}
	defer trimLayer(initproc.FDPath(lm.fd))
	return fn(upper)
}

// fitrim is FITRIM from linux/fs.h: _IOWR('X', 121, struct fstrim_range),
// the same number on amd64 and arm64.
const fitrim = 0xc0185879

// trimLayer discards the free blocks of the layer file system mounted at
// root (fstrim(8)): its loop device punches them out of disk.img, so the
// space of a replaced tree (a restore extracts beside the old one, then
// removes it) or of a failed restore goes back to the host; without it
// each restore grew the image by the snapshot's size. Best effort: a file
// system or device without discard keeps the space.
func trimLayer(root string) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	r := struct{ start, len, minlen uint64 }{len: math.MaxUint64}
	unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fitrim, uintptr(unsafe.Pointer(&r)))
}

// layerReleaseWait bounds the wait for a stopped box's loop device to be
// released (its mount namespace is torn down after its init exits).
const layerReleaseWait = 5 * time.Second

// ResetWork empties the overlay work dir beside upperDir (the sibling
// "work"), which overlayfs requires to be empty of stale state when the
// upper layer was replaced.
func ResetWork(upperDir string) error {
	return os.RemoveAll(filepath.Join(filepath.Dir(upperDir), "work"))
}
