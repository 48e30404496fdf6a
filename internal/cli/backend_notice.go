package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/hermes-go/hermes/internal/backend"
)

// noticeBackend tells the person, once per run on stderr, that the
// terminal backend could not open an environment. The tool result already
// tells the model; without this line a one-shot run whose box cannot start
// (no delegated cgroup, no overlayfs) printed only the model's answer and
// exited 0, and the user never learnt that nothing had run.
type noticeBackend struct {
	backend.Backend
	stderr io.Writer
	once   sync.Once
}

// Isolated passes the wrapped backend's capability on.
func (n *noticeBackend) Isolated() bool { return backend.Isolated(n.Backend) }

// Open is the wrapped Open; its first failure is printed.
func (b *noticeBackend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	env, err := b.Backend.Open(ctx, taskID)
	if err != nil && ctx.Err() == nil {
		b.once.Do(func() {
			fmt.Fprintf(b.stderr, "hermes: warning: the %s backend is not available, so the model's commands and file tools are refused "+
				"(nothing runs on the host): %s\n", b.Backend.Kind(), escapeControls(err.Error()))
		})
	}
	return env, err
}

// Stop stops the box of one task when the wrapped backend keeps boxes per
// task (the session runtime stops a closed session's box through it).
func (b *noticeBackend) Stop(taskID string) error {
	if st, ok := b.Backend.(interface{ Stop(taskID string) error }); ok {
		return st.Stop(taskID)
	}
	return nil
}
