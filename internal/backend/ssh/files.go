package ssh

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/shellfs"
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
	out, code, err := e.run(ctx, shellfs.StatCommand(full), nil)
	if err != nil {
		return backend.FileInfo{}, err
	}
	if code != 0 {
		return backend.FileInfo{}, fileError("stat", full, string(out), fs.ErrNotExist)
	}
	return shellfs.ParseStat(full, string(out))
}

// ReadDir lists a directory (without . and ..), sorted by name.
func (e *Environment) ReadDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	full := e.abs(p)
	out, code, err := e.run(ctx, shellfs.ReadDirCommand(full), nil)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fileError("list", full, string(out), fs.ErrNotExist)
	}
	return shellfs.ParseReadDir(full, string(out))
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
