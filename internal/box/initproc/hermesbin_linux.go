package initproc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// bindHermes binds the host's hermes binary (s.HermesExe) read-only,
// nosuid and nodev at wire.HermesBinDir/NAME for each of s.HermesNames, so
// `hermes gateway run` works in every box however hermes was installed on
// the host. A name the box root already has as a non-empty regular file
// there (an image that ships its own hermes) keeps it. The empty file the
// bind needs as its mount point lands in the box's writable layer.
func bindHermes(root *boxRoot, s *wire.InitSpec) error {
	if s.HermesExe == "" || len(s.HermesNames) == 0 {
		return nil
	}
	dir, err := root.realDir(wire.HermesBinDir)
	if err != nil {
		return fmt.Errorf("hermes binary dir: %w", err)
	}
	defer unix.Close(dir)
	for _, name := range s.HermesNames {
		if err := bindHermesAs(root, dir, wire.HermesBinDir, s.HermesExe, name, true); err != nil {
			return fmt.Errorf("bind %s at %s/%s: %w", s.HermesExe, wire.HermesBinDir, name, err)
		}
	}
	return nil
}

// bindSudo binds s.HermesExe as wire.SudoPath (read-only, nosuid, nodev)
// in a box with sudo (s.SudoUIDs), over any file the image has there: a
// setuid sudo cannot work under no_new_privs.
func bindSudo(root *boxRoot, s *wire.InitSpec) error {
	if s.HermesExe == "" || len(s.SudoUIDs) == 0 {
		return nil
	}
	dirName := filepath.Dir(wire.SudoPath)
	dir, err := root.realDir(dirName)
	if err != nil {
		return fmt.Errorf("sudo dir: %w", err)
	}
	defer unix.Close(dir)
	if err := bindHermesAs(root, dir, dirName, s.HermesExe, filepath.Base(wire.SudoPath), false); err != nil {
		return fmt.Errorf("bind %s at %s: %w", s.HermesExe, wire.SudoPath, err)
	}
	return bindSudoOnPath(root, s)
}

// bindSudoOnPath binds s.HermesExe as `sudo` in the first directory of
// s.SudoPathDirs (the image's PATH) that exists in the box (resolved
// inside it) and has no `sudo`; none such binds nothing.
func bindSudoOnPath(root *boxRoot, s *wire.InitSpec) error {
	for _, d := range s.SudoPathDirs {
		parts, err := boxRelPath(d)
		if err != nil || len(parts) == 0 {
			continue
		}
		how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: inRoot}
		dir, err := unix.Openat2(root.fd, strings.Join(parts, "/"), &how)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dir, "sudo", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			unix.Close(dir)
			continue
		}
		err = bindHermesAs(root, dir, "/"+strings.Join(parts, "/"), s.HermesExe, "sudo", false)
		unix.Close(dir)
		if err != nil {
			return fmt.Errorf("bind %s at %s/sudo: %w", s.HermesExe, d, err)
		}
		return nil
	}
	return nil
}

// bindHermesAs binds exe at dirName/name (dir is its descriptor); with
// keepImage a non-empty regular file there stays instead.
func bindHermesAs(root *boxRoot, dir int, dirName, exe, name string, keepImage bool) error {
	var st unix.Stat_t
	err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0 && keepImage:
		return nil // the image's own
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
		// Mounted over as it is (not opened for writing: no copy-up).
	case err == nil:
		if err := unix.Unlinkat(dir, name, 0); err != nil {
			return err
		}
		fallthrough
	case errors.Is(err, unix.ENOENT):
		fd, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o755)
		if err != nil {
			return err
		}
		unix.Close(fd)
	default:
		return err
	}
	target, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	if err := unix.Mount(exe, FDPath(target), "", unix.MS_BIND, ""); err != nil {
		return err
	}
	// target is the file under the new mount; look the path up again to
	// reach the mount itself and make it read-only.
	mounted, err := root.resolve(filepath.Join(strings.TrimPrefix(dirName, "/"), name))
	if err != nil {
		return err
	}
	defer unix.Close(mounted)
	// A remount in a user namespace must keep the source's locked flags
	// (mount_namespaces(7)), so keep the ones statfs reports.
	var sf unix.Statfs_t
	if err := unix.Fstatfs(mounted, &sf); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	for st1, ms := range map[int64]uintptr{unix.ST_NOEXEC: unix.MS_NOEXEC, unix.ST_NOATIME: unix.MS_NOATIME,
		unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME} {
		if sf.Flags&st1 != 0 {
			flags |= ms
		}
	}
	if err := unix.Mount("", FDPath(mounted), "", flags, ""); err != nil {
		unix.Unmount(FDPath(mounted), unix.MNT_DETACH)
		return fmt.Errorf("make read-only: %w", err)
	}
	return nil
}
