package box

import (
	"context"
	"errors"
	"os"

	"github.com/hermes-go/hermes/internal/backend"
)

// Chown sets the owner of path inside the box (lchown(2): a symlink
// itself, never its target). Only the box's owner may (an attached
// connection is refused); the E2B-compatible server uses it to give the
// sandbox user its home, which the box's init creates as root.
func (b *Box) Chown(ctx context.Context, path string, uid, gid uint32) error {
	if b.Attached() {
		return errors.New("box: chown needs the box's owner, not an attached process")
	}
	_, err := b.fileCall(ctx, request{Op: opChown, Path: b.abs(path), Owner: &backend.Account{UID: uid, GID: gid}}, "chown")
	return err
}

// Chown sets the owner of path in the task's box (Box.Chown).
func (e *taskEnv) Chown(ctx context.Context, path string, uid, gid uint32) error {
	b, err := e.box(ctx)
	if err != nil {
		return err
	}
	return b.Chown(ctx, path, uid, gid)
}

// chownOp serves opChown in the init: for the owner's connection only.
func chownOp(c *initConn, req request) error {
	if c.attached || req.Owner == nil {
		return errors.New("chown: not allowed")
	}
	return os.Lchown(req.Path, int(req.Owner.UID), int(req.Owner.GID))
}
