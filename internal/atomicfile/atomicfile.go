// Package atomicfile is the one way hermes replaces a file of user state
// (config.yaml, .env, the session index, usage files, the secret store,
// snapshot metadata…): a crash at any point leaves the old content or the
// new one, never a mix or an empty file.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

type options struct{ keepMode bool }

// Option changes Write.
type Option func(*options)

// KeepMode makes an existing file keep its permission bits (perm then
// applies only to a new file).
func KeepMode() Option { return func(o *options) { o.keepMode = true } }

// Write replaces path with data: a temporary file in the same directory
// is written, fsynced and renamed over path (github.com/google/renameio),
// then the directory is fsynced so the rename survives a power loss.
// Missing parent directories are created with mode 0700. Errors name the
// path.
func Write(path string, data []byte, perm os.FileMode, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if o.keepMode {
		if st, err := os.Stat(path); err == nil {
			perm = st.Mode().Perm()
		}
	}
	// Not renameio.WriteFile: it always copies an existing file's mode.
	f, err := renameio.NewPendingFile(path, renameio.WithStaticPermissions(perm))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Cleanup()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
