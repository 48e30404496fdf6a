package ssh

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// File operations are small shell programs over the same connection
// (cat, mktemp + mv, GNU stat and find): no SFTP subsystem is needed on
// the host.

// ReadFile returns the file's bytes.
func (e *Environment) ReadFile(ctx context.Context, p string) ([]byte, error) {
	s, err := e.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("ssh session: %w", err)
	}
	defer s.Close()
	var out, errOut bytes.Buffer
	s.Stdout, s.Stderr = &out, &errOut
	if err := runCtx(ctx, s, "cat -- "+quote(e.abs(p))); err != nil {
		return nil, fileError("read", e.abs(p), errOut.String(), err)
	}
	return out.Bytes(), nil
}

// WriteFile replaces the file atomically (a temporary file in the same
// directory renamed over it), creating parent directories.
func (e *Environment) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	full := e.abs(p)
	dir := path.Dir(full)
	script := fmt.Sprintf(`mkdir -p -- %[1]s && t=$(mktemp -- %[1]s/.hermes-write-XXXXXX) && { cat > "$t" && chmod %[2]o "$t" && mv -f -- "$t" %[3]s || { rm -f -- "$t"; exit 1; }; }`,
		quote(dir), perm.Perm(), quote(full))
	s, err := e.client.NewSession()
	if err != nil {
		return fmt.Errorf("ssh session: %w", err)
	}
	defer s.Close()
	var errOut bytes.Buffer
	s.Stdin, s.Stderr = bytes.NewReader(data), &errOut
	if err := runCtx(ctx, s, script); err != nil {
		return fileError("write", full, errOut.String(), err)
	}
	return nil
}

// Stat describes one file (symlinks followed).
func (e *Environment) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.run(ctx, "stat -L -c '%s %f %Y' -- "+quote(full), nil)
	if err != nil {
		return backend.FileInfo{}, err
	}
	if code != 0 {
		return backend.FileInfo{}, fileError("stat", full, string(out), fs.ErrNotExist)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return backend.FileInfo{}, fmt.Errorf("stat %s: unexpected output %q", full, out)
	}
	return fileInfo(path.Base(full), f[0], f[1], f[2], 16)
}

// ReadDir lists a directory (without . and ..), sorted by name.
func (e *Environment) ReadDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.run(ctx, `cd -- `+quote(full)+` && find . -mindepth 1 -maxdepth 1 -printf '%s %m %T@ %y %f\0' | sort -z`, nil)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fileError("list", full, string(out), fs.ErrNotExist)
	}
	var list []backend.FileInfo
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, " ", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("list %s: unexpected entry %q", full, rec)
		}
		mode := f[1]
		if f[3] == "d" {
			mode = "d" + mode
		}
		fi, err := fileInfo(f[4], f[0], mode, strings.SplitN(f[2], ".", 2)[0], 8)
		if err != nil {
			return nil, err
		}
		list = append(list, fi)
	}
	return list, nil
}

// fileInfo parses size, mode (raw st_mode in base modeBase, or "d"+octal
// permissions from find) and mtime in seconds.
func fileInfo(name, size, mode, mtime string, modeBase int) (backend.FileInfo, error) {
	n, err1 := strconv.ParseInt(size, 10, 64)
	sec, err2 := strconv.ParseInt(mtime, 10, 64)
	isDir := strings.HasPrefix(mode, "d")
	raw, err3 := strconv.ParseUint(strings.TrimPrefix(mode, "d"), modeBase, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return backend.FileInfo{}, fmt.Errorf("unexpected file listing for %s: %q %q %q", name, size, mode, mtime)
	}
	if modeBase == 16 {
		isDir = raw&0o170000 == 0o040000
	}
	m := fs.FileMode(raw & 0o777)
	if isDir {
		m |= fs.ModeDir
	}
	return backend.FileInfo{Name: name, Size: n, Mode: m, ModTime: time.Unix(sec, 0), IsDir: isDir}, nil
}

func fileError(op, p, stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if strings.Contains(msg, "No such file") {
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("%s %s: %s", op, p, msg)
}
