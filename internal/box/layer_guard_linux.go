package box

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LayerInUseError is returned when a persistent box's disk image is
// attached to a loop device that is mounted, or otherwise held, somewhere
// else: mounting it again read-write through a second loop device would
// give two ext4 instances over one image and corrupt it (free counts,
// bitmaps). hermes mounts a layer only as a detached mount that ends with
// its process, so such a leftover comes from an older hermes (whose
// snapshot or restore was killed) or from another tool.
type LayerInUseError struct {
	Image  string   // the box's disk.img
	Device string   // the loop device backed by Image, "/dev/loopN"
	Mounts []string // where Device is mounted in this mount namespace; empty when held elsewhere
}

func (e *LayerInUseError) Error() string {
	if len(e.Mounts) > 0 {
		return fmt.Sprintf("box disk image %s is attached to %s, which is mounted at %s (left by a killed hermes or another tool); "+
			"a second mount would corrupt it: run `umount %s` (the loop device then detaches; if it stays, `losetup -d %s`), check the image with `e2fsck -f %s`, and retry",
			e.Image, e.Device, strings.Join(e.Mounts, ", "), strings.Join(e.Mounts, " "), e.Device, e.Image)
	}
	return fmt.Sprintf("box disk image %s is attached to %s, which is still mounted in another mount namespace or held open by another process; "+
		"a second mount would corrupt it: find the holder (`grep -l %s /proc/*/mountinfo`, `fuser -v %s`), end it or unmount it there, then retry",
		e.Image, e.Device, filepath.Base(e.Device), e.Device)
}

// awaitImageFree makes sure no loop device is backed by image before the
// caller attaches one. A device mounted in this mount namespace is
// refused at once (it never goes away by itself). One that nothing holds
// (an attached, unmounted leftover, or a stopped box's device not yet
// auto-cleared) is detached. One still held (mounted in another mount
// namespace, or open exclusively) is waited for up to limit, since a box
// that just stopped releases its device as its mount namespace is torn
// down; if it is still held then, it is refused. The error is a
// *LayerInUseError.
func awaitImageFree(image string, limit time.Duration) error {
	devs := loopDevicesFor(image)
	if len(devs) == 0 {
		return nil
	}
	wait := 100 * time.Millisecond // for the kernel to drop detached devices
	for _, dev := range devs {
		if mps := deviceMountPoints(dev); len(mps) > 0 {
			return &LayerInUseError{Image: image, Device: dev, Mounts: mps}
		}
		if detachIdleLoop(dev) != nil {
			wait = limit
		}
	}
	if awaitNoLoop(image, wait) {
		return nil
	}
	for _, dev := range loopDevicesFor(image) {
		if mps := deviceMountPoints(dev); len(mps) > 0 {
			return &LayerInUseError{Image: image, Device: dev, Mounts: mps}
		}
		if err := detachIdleLoop(dev); err != nil {
			return &LayerInUseError{Image: image, Device: dev}
		}
	}
	if !awaitNoLoop(image, 100*time.Millisecond) {
		if devs := loopDevicesFor(image); len(devs) > 0 {
			return &LayerInUseError{Image: image, Device: devs[0]}
		}
	}
	return nil
}

// detachIdleLoop detaches loop device dev unless something holds it: it
// opens dev exclusively (which fails with EBUSY while a file system is
// mounted from it, in any mount namespace, or another exclusive opener
// has it), then clears it (LOOP_CLR_FD; with other plain openers the
// kernel detaches it when the last one closes).
func detachIdleLoop(dev string) error {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s exclusively: %w", dev, err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// loopDevicesFor returns every bound loop device backed by image
// ("/dev/loopN"). A device is matched by the backing file's device and
// inode (LOOP_GET_STATUS64's lo_device/lo_inode against stat of image),
// so a device attached through another name of the same file (a hard
// link, a bind mount of HERMES_HOME, a symlinked path) is found too; the
// backing path in /sys is only a fallback when the device cannot be
// opened.
func loopDevicesFor(image string) []string {
	var img unix.Stat_t
	haveStat := unix.Stat(image, &img) == nil
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, m := range matches {
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(m)))
		if haveStat {
			if same, ok := loopBackedBy(dev, &img); ok {
				if same {
					out = append(out, dev)
				}
				continue
			}
		}
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		b = bytes.TrimSuffix(bytes.TrimSpace(b), []byte(" (deleted)"))
		if string(b) == image {
			out = append(out, dev)
		}
	}
	return out
}

// loopBackedBy reports whether loop device dev is backed by the file img
// describes, by device and inode; ok is false when dev cannot be asked
// (not openable, or unbound meanwhile: then it backs nothing).
func loopBackedBy(dev string, img *unix.Stat_t) (same, ok bool) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	info, err := unix.IoctlLoopGetStatus64(fd)
	if errors.Is(err, unix.ENXIO) {
		return false, true // detached since the glob
	}
	if err != nil {
		return false, false
	}
	return unix.Major(info.Device) == unix.Major(img.Dev) && unix.Minor(info.Device) == unix.Minor(img.Dev) &&
		info.Inode == img.Ino, true
}

// awaitNoLoop waits up to limit until no loop device is backed by image
// (by device and inode, see loopDevicesFor).
func awaitNoLoop(image string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if len(loopDevicesFor(image)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// deviceMountPoints lists the mount points of block device dev
// ("/dev/loopN") in this process's mount namespace, matched by device
// number (/proc/self/mountinfo field 3).
func deviceMountPoints(dev string) []string {
	num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
	if err != nil {
		return nil
	}
	majmin := strings.TrimSpace(string(num))
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[2] == majmin {
			out = append(out, unescapeMountinfo(f[4]))
		}
	}
	return out
}
