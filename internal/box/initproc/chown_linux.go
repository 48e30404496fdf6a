package initproc

import (
	"errors"
	"os"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// chownOp serves wire.OpChown: for the owner's connection only (an
// attached process may not give files away).
func chownOp(c *initConn, req wire.Request) error {
	if c.attached || req.Owner == nil {
		return errors.New("chown: not allowed")
	}
	return os.Lchown(req.Path, int(req.Owner.UID), int(req.Owner.GID))
}
