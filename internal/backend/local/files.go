package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend"
)

// maxLinks bounds the symbolic links followed by one file operation, as
// the kernel's own limit (ELOOP after 40).
const maxLinks = 40

// ReadFile returns the content of path (absolute, "~/...", or relative to
// the workdir). Errors wrap fs.ErrNotExist / fs.ErrPermission. The file
// that is opened is the file that is checked: HERMES_HOME's protected
// entries (IsProtectedName) are refused by device and inode, whatever
// name, symlink or hard link leads to them.
func (e *Environment) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs := e.Resolve(path)
	p, err := e.protection()
	if err != nil {
		return nil, err
	}
	for range maxLinks {
		dirfd, name, err := p.openParent(abs)
		if err != nil {
			return nil, err
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if errors.Is(err, unix.ELOOP) {
			abs, err = followLink(dirfd, filepath.Dir(abs), name)
			unix.Close(dirfd)
			if err != nil {
				return nil, &fs.PathError{Op: "read", Path: path, Err: err}
			}
			continue
		}
		unix.Close(dirfd)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: abs, Err: err}
		}
		f := os.NewFile(uintptr(fd), abs)
		defer f.Close()
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, &fs.PathError{Op: "stat", Path: abs, Err: err}
		}
		if why := p.refuseRead(st); why != "" {
			return nil, &fs.PathError{Op: "read", Path: path, Err: protectedError(why)}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("is a directory")}
		}
		return io.ReadAll(f)
	}
	return nil, &fs.PathError{Op: "read", Path: path, Err: unix.ELOOP}
}

// WriteFile replaces path atomically: the data goes to a temporary file in
// the same directory, which is fsynced and renamed over path. Missing
// parent directories are created (0755). An existing file keeps its mode;
// a new one gets perm (0644 when perm is 0). When path is a symlink the
// file it points to is replaced.
//
// The directory is opened once and every later step (the check of the
// existing entry, the temporary file, the rename) works on that
// descriptor, so a symlink swapped in meanwhile is replaced, never
// followed. HERMES_HOME's config.yaml and protected entries are refused
// by device and inode, and so is creating one of their names there.
func (e *Environment) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if perm == 0 {
		perm = 0o644
	}
	abs := e.Resolve(path)
	p, err := e.protection()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	for range maxLinks {
		dirfd, name, err := p.openParent(abs)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
			abs, err = followLink(dirfd, filepath.Dir(abs), name)
			unix.Close(dirfd)
			if err != nil {
				return &fs.PathError{Op: "write", Path: path, Err: err}
			}
			continue
		case err == nil:
			if why := p.refuseWrite(st); why != "" {
				unix.Close(dirfd)
				return &fs.PathError{Op: "write", Path: path, Err: protectedError(why)}
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				unix.Close(dirfd)
				return &fs.PathError{Op: "write", Path: abs, Err: errors.New("is a directory")}
			}
			perm = fs.FileMode(st.Mode & 0o777)
		case !errors.Is(err, unix.ENOENT):
			unix.Close(dirfd)
			return &fs.PathError{Op: "stat", Path: abs, Err: err}
		}
		if why := p.refuseName(dirfd, name); why != "" {
			unix.Close(dirfd)
			return &fs.PathError{Op: "write", Path: path, Err: protectedError(why)}
		}
		err = replaceAt(dirfd, name, data, perm)
		unix.Close(dirfd)
		if err != nil {
			return &fs.PathError{Op: "write", Path: abs, Err: err}
		}
		return nil
	}
	return &fs.PathError{Op: "write", Path: path, Err: unix.ELOOP}
}

// replaceAt writes data to a new temporary file in dirfd and renames it
// over name, fsyncing the file and the directory.
func replaceAt(dirfd int, name string, data []byte, perm fs.FileMode) error {
	var tmp string
	var fd int
	var err error
	for i := range 100 {
		tmp = "." + name + ".tmp-" + strconv.FormatInt(time.Now().UnixNano()+int64(i), 36)
		fd, err = unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	cleanup := func(err error) error {
		_ = f.Close()
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Chmod(perm); err != nil {
		return cleanup(err)
	}
	if err := f.Sync(); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	_ = unix.Fsync(dirfd) // persist the rename; not all filesystems support it
	return nil
}

// followLink reads the symlink name in dirfd (whose path is dir) and
// returns the absolute path it points to.
func followLink(dirfd int, dir, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	target := string(buf[:n])
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return filepath.Clean(target), nil
}

// protectedError is the error of a refused protected file.
func protectedError(why string) error {
	return fmt.Errorf("%w: %s", fs.ErrPermission, why)
}

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(st unix.Stat_t) fileID { return fileID{uint64(st.Dev), st.Ino} }

// protection holds the identities of HERMES_HOME's protected files as they
// are now (stat'ed per operation: hermes replaces them atomically, which
// changes their inode).
type protection struct {
	home     fileID          // HERMES_HOME; zero when there is none
	secret   map[fileID]bool // protected entries: never read or written
	dirs     map[fileID]bool // the protected entries that are directories
	readOnly map[fileID]bool // config.yaml: readable, never written
}

// protection returns the current protected identities of e's HERMES_HOME.
func (e *Environment) protection() (*protection, error) {
	p := &protection{secret: map[fileID]bool{}, dirs: map[fileID]bool{}, readOnly: map[fileID]bool{}}
	if e.hermesHome == "" {
		return p, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(e.hermesHome, &st); err != nil {
		return p, nil // no HERMES_HOME yet: nothing to protect
	}
	p.home = idOf(st)
	entries, err := os.ReadDir(e.hermesHome)
	if err != nil {
		return nil, fmt.Errorf("reading HERMES_HOME %s: %w", e.hermesHome, err)
	}
	for _, ent := range entries {
		name := ent.Name()
		if !IsProtectedName(name) && name != "config.yaml" {
			continue
		}
		if err := unix.Stat(filepath.Join(e.hermesHome, name), &st); err != nil {
			continue
		}
		switch {
		case name == "config.yaml":
			p.readOnly[idOf(st)] = true
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			p.dirs[idOf(st)] = true
			p.secret[idOf(st)] = true
		default:
			p.secret[idOf(st)] = true
		}
	}
	return p, nil
}

// openParent opens the directory that holds abs (following symlinks but
// no /proc magic links) and returns it with the last path element. It
// refuses a directory that is, or is inside, a protected directory, found
// by walking ".." from the opened directory and comparing identities.
func (p *protection) openParent(abs string) (int, string, error) {
	dir, name := filepath.Split(filepath.Clean(abs))
	if name == "" {
		return -1, "", &fs.PathError{Op: "open", Path: abs, Err: errors.New("is a directory")}
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	dirfd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
	if errors.Is(err, unix.ENOSYS) { // kernels before 5.6
		dirfd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	if len(p.dirs) > 0 {
		if inside, err := p.insideProtectedDir(dirfd); err != nil || inside {
			unix.Close(dirfd)
			if err == nil {
				err = protectedError("it is in one of hermes' credential stores (HERMES_HOME/secrets, mcp-tokens, pairing)")
			}
			return -1, "", &fs.PathError{Op: "open", Path: abs, Err: err}
		}
	}
	return dirfd, name, nil
}

// insideProtectedDir walks from dirfd up to "/" and reports whether one
// of the directories on the way is protected.
func (p *protection) insideProtectedDir(dirfd int) (bool, error) {
	var st unix.Stat_t
	cur, err := unix.Openat(dirfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer func() { unix.Close(cur) }()
	for range 256 {
		if err := unix.Fstat(cur, &st); err != nil {
			return false, err
		}
		if p.dirs[idOf(st)] {
			return true, nil
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		var upSt unix.Stat_t
		if err := unix.Fstat(up, &upSt); err != nil {
			unix.Close(up)
			return false, err
		}
		unix.Close(cur)
		cur = up
		if idOf(upSt) == idOf(st) { // "/" is its own parent
			return false, nil
		}
	}
	return false, nil
}

// refuseRead returns why the opened file st may not be read, or "".
func (p *protection) refuseRead(st unix.Stat_t) string {
	if p.secret[idOf(st)] {
		return "it holds hermes' API keys or session data (HERMES_HOME/.env, secrets/, state.db...); the user manages them with `hermes config`"
	}
	return ""
}

// refuseWrite returns why the existing file st may not be replaced, or "".
func (p *protection) refuseWrite(st unix.Stat_t) string {
	if why := p.refuseRead(st); why != "" {
		return why
	}
	if p.readOnly[idOf(st)] {
		return "it is hermes' configuration (config.yaml); only the user changes settings, with `hermes config set KEY VALUE`"
	}
	return ""
}

// refuseName returns why name may not be created or replaced in the
// directory dirfd, or "": HERMES_HOME's config.yaml and protected names.
func (p *protection) refuseName(dirfd int, name string) string {
	if p.home == (fileID{}) || (!IsProtectedName(name) && name != "config.yaml") {
		return ""
	}
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil || idOf(st) != p.home {
		return ""
	}
	return "it is one of hermes' own files in HERMES_HOME (" + name + "); only the user changes it, with `hermes config set`"
}

// Stat describes path, following symlinks.
func (e *Environment) Stat(ctx context.Context, path string) (backend.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return backend.FileInfo{}, err
	}
	st, err := os.Stat(e.Resolve(path))
	if err != nil {
		return backend.FileInfo{}, err
	}
	return fileInfo(st), nil
}

// ReadDir lists the directory path sorted by name. Entries whose metadata
// cannot be read (a file removed meanwhile) are left out.
func (e *Environment) ReadDir(ctx context.Context, path string) ([]backend.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(e.Resolve(path))
	if err != nil {
		return nil, err
	}
	out := make([]backend.FileInfo, 0, len(entries))
	for _, ent := range entries {
		st, err := ent.Info()
		if err != nil {
			continue
		}
		out = append(out, fileInfo(st))
	}
	return out, nil
}

func fileInfo(st fs.FileInfo) backend.FileInfo {
	return backend.FileInfo{Name: st.Name(), Size: st.Size(), Mode: st.Mode(), ModTime: st.ModTime(), IsDir: st.IsDir()}
}
