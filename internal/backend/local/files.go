package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/backend"
)

// ReadFile returns the content of path (absolute, "~/...", or relative to
// the workdir). Errors wrap fs.ErrNotExist / fs.ErrPermission.
func (e *Environment) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.ReadFile(e.Resolve(path))
}

// WriteFile replaces path atomically: the data goes to a temporary file in
// the same directory, which is fsynced and renamed over path. Missing
// parent directories are created (0755). An existing file keeps its mode;
// a new one gets perm (0644 when perm is 0). When path is a symlink the
// file it points to is replaced.
func (e *Environment) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	target := e.Resolve(path)
	if resolved, err := filepath.EvalSymlinks(target); err == nil {
		target = resolved
	}
	if perm == 0 {
		perm = 0o644
	}
	if st, err := os.Stat(target); err == nil {
		if st.IsDir() {
			return &fs.PathError{Op: "write", Path: target, Err: errors.New("is a directory")}
		}
		perm = st.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	cleanup := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return cleanup(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return cleanup(err)
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(err)
	}
	if err := tmp.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(tmpName, target); err != nil {
		_ = os.Remove(tmpName)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // persist the rename; not all filesystems support it
		_ = d.Close()
	}
	return nil
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
