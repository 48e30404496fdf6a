package box

import (
	"context"
	"io/fs"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box/wire"
)

func (b *Box) fileCall(ctx context.Context, req wire.Request, op string) (wire.Response, error) {
	b.touch(1)
	defer b.touch(-1)
	r, err := b.roundTrip(ctx, req)
	if err != nil {
		return r, err
	}
	if r.Kind == wire.KindError {
		return r, responseError(r, op, req.Path)
	}
	return r, nil
}

// ReadFile returns the contents of path inside the box.
func (b *Box) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r, err := b.fileCall(ctx, wire.Request{Op: wire.OpReadFile, Path: b.abs(path)}, "read")
	return r.Data, err
}

// WriteFile replaces path inside the box atomically, creating parents.
func (b *Box) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	req := wire.Request{Op: wire.OpWriteFile, Path: b.abs(path), Data: data, Perm: uint32(perm.Perm())}
	if !b.Attached() {
		_, err := b.fileCall(ctx, req, "write")
		return err
	}
	// An attached connection takes frames of at most wire.MaxAttachFrame: the
	// data goes in parts, renamed into place after the last.
	for {
		n := min(len(data), wire.AttachWriteChunk)
		req.Data, req.More = data[:n], n < len(data)
		if _, err := b.fileCall(ctx, req, "write"); err != nil || !req.More {
			return err
		}
		data, req.Offset = data[n:], req.Offset+int64(n)
	}
}

func fromWire(w wire.FileInfo) backend.FileInfo {
	return backend.FileInfo{Name: w.Name, Size: w.Size, Mode: fs.FileMode(w.Mode), ModTime: w.ModTime, IsDir: w.IsDir}
}

// Stat describes path inside the box (following symlinks).
func (b *Box) Stat(ctx context.Context, path string) (backend.FileInfo, error) {
	r, err := b.fileCall(ctx, wire.Request{Op: wire.OpStat, Path: b.abs(path)}, "stat")
	if err != nil || r.Info == nil {
		return backend.FileInfo{}, err
	}
	return fromWire(*r.Info), nil
}

// ReadDir lists path inside the box, sorted by name.
func (b *Box) ReadDir(ctx context.Context, path string) ([]backend.FileInfo, error) {
	r, err := b.fileCall(ctx, wire.Request{Op: wire.OpReadDir, Path: b.abs(path)}, "readdir")
	if err != nil {
		return nil, err
	}
	out := make([]backend.FileInfo, 0, len(r.Infos))
	for _, w := range r.Infos {
		out = append(out, fromWire(w))
	}
	return out, nil
}
