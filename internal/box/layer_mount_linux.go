package box

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/initproc"
)

// layerMount is the ext4 file system of a persistent box's layer image,
// mounted by the host as a detached mount: attached to a loop device and
// set up with the mount API of Linux 5.2+ (fsopen(2), fsconfig(2),
// fsmount(2)), visible in no mount namespace. The box's init moves it into
// its own namespace with move_mount(2) (receiveLayerMount). Mounting ext4
// (loop attach, superblock, journal) takes 1.5–4 ms on this machine; the host
// does it while the init boots, or, for a prestarted disk image, ahead of
// the box start. Until it is moved, closing it unmounts the file system
// and frees the loop device (LO_FLAGS_AUTOCLEAR).
type layerMount struct {
	fd int
}

// mountLayerDetached mounts the ext4 image as a detached mount.
func mountLayerDetached(image string) (*layerMount, error) {
	dev, lf, err := initproc.AttachLoop(image)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the mount holds the device from here on
	fsfd, err := unix.Fsopen("ext4", unix.FSOPEN_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return nil, fmt.Errorf("mount %s: this kernel lacks the mount API (fsopen(2), Linux 5.2+) that persistent box layers need: boot a newer kernel, or set terminal.container_persistent: false: %w", image, err)
		}
		return nil, fmt.Errorf("fsopen ext4: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "source", dev); err != nil {
		return nil, fmt.Errorf("mount %s (%s): source: %w", image, dev, err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("mount %s (%s): %w", image, dev, err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOATIME)
	if err != nil {
		return nil, fmt.Errorf("mount %s (%s): fsmount: %w", image, dev, err)
	}
	return &layerMount{fd: mfd}, nil
}

// Close drops the host's handle: the file system is unmounted unless an
// init has moved it into its namespace (or a passed copy is in flight).
func (l *layerMount) Close() {
	if l != nil && l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
}

// send passes the mount to the init over its connection socket (it reads
// it during setup, see receiveLayerMount) and closes the host's handle.
func (l *layerMount) send(sock *net.UnixConn) error {
	defer l.Close()
	var tag [8]byte // id 0
	_, _, err := sock.WriteMsgUnix(tag[:], unix.UnixRights(l.fd), nil)
	return err
}
