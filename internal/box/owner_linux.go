package box

import (
	"context"
	"errors"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/box/wire"
)

// Chown sets the owner of path inside the box (lchown(2): a symlink
// itself, never its target). Only the box's owner may (an attached
// connection is refused), and only with Options.SwitchUsers; the
// E2B-compatible server uses it to give the sandbox user its home, which
// the box's init creates as root.
func (b *Box) Chown(ctx context.Context, path string, uid, gid uint32) error {
	if b.Attached() {
		return errors.New("box: chown needs the box's owner, not an attached process")
	}
	_, err := b.fileCall(ctx, wire.Request{Op: wire.OpChown, Path: b.abs(path), Owner: &wire.Account{UID: uid, GID: gid}}, "chown")
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

// wireAccount is a on the wire (nil stays nil).
func wireAccount(a *backend.Account) *wire.Account {
	if a == nil {
		return nil
	}
	return &wire.Account{UID: a.UID, GID: a.GID}
}
