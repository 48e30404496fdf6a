package workspacefile

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// statOSRoot is statRel through Go's os.Root (kernels without openat2):
// links are followed while they stay inside the root.
func (r *Reader) statOSRoot(name, rel string) (*unix.Stat_t, error) {
	fi, err := r.osRoot.Stat(rel)
	if err != nil {
		return nil, r.osRootError(name, err)
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: errors.New("no device and inode")}
	}
	return &unix.Stat_t{Dev: sys.Dev, Ino: sys.Ino, Mode: sys.Mode, Size: sys.Size,
		Mtim: unix.Timespec{Sec: sys.Mtim.Sec, Nsec: sys.Mtim.Nsec}}, nil
}

// osRootError turns an os.Root error into a refusal naming why. os.Root
// reports a name that leaves the root as "path escapes from parent"
// (there is no exported sentinel).
func (r *Reader) osRootError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case errors.Is(err, unix.ELOOP):
		return &RefusedError{Kind: LinkOut, Name: name, Reason: reasonMagicLink}
	case strings.Contains(err.Error(), "escapes"):
		rel, _ := relName(r.root, name)
		if fi, lerr := r.osRoot.Lstat(rel); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &RefusedError{Kind: LinkOut, Name: name, Reason: reasonLinkOut}
		}
		return &RefusedError{Kind: LinkOut, Name: name, Reason: reasonPathOut}
	}
	return err
}
