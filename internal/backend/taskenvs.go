package backend

import (
	"errors"
	"fmt"
	"sync"
)

// ErrClosed is what Open of a closed backend returns (wrapped with the
// backend's kind).
var ErrClosed = errors.New("backend is closed")

// TaskEnvs is the table of per-task environments every backend keeps
// behind Open and Close: one environment per task id, created on the
// task's first Open and handed back on the next ones, all closed together
// by Close. E is the backend's environment type.
//
// create runs under the table's lock, so two Opens of one task never
// create two environments; creates of different tasks wait for each other
// too (as each backend did before the table was shared). The methods are
// safe for concurrent use.
type TaskEnvs[E interface{ Close() error }] struct {
	kind   string
	mu     sync.Mutex
	envs   map[string]E
	closed bool
}

// NewTaskEnvs returns an empty table; kind ("ssh", "docker"...) names the
// backend in the error of an Open after Close.
func NewTaskEnvs[E interface{ Close() error }](kind string) *TaskEnvs[E] {
	return &TaskEnvs[E]{kind: kind, envs: map[string]E{}}
}

// Open returns taskID's environment, calling create when the task has
// none yet. A failed create stores nothing, so the next Open tries again.
// After Close it returns an error wrapping ErrClosed.
func (t *TaskEnvs[E]) Open(taskID string, create func() (E, error)) (E, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var zero E
	if t.closed {
		return zero, fmt.Errorf("%s %w", t.kind, ErrClosed)
	}
	if e, ok := t.envs[taskID]; ok {
		return e, nil
	}
	e, err := create()
	if err != nil {
		return zero, err
	}
	t.envs[taskID] = e
	return e, nil
}

// Close empties the table, refuses later Opens, and closes every
// environment (outside the lock, in no set order), returning their errors
// joined. A second Close closes nothing.
func (t *TaskEnvs[E]) Close() error {
	t.mu.Lock()
	envs := t.envs
	t.envs = map[string]E{}
	t.closed = true
	t.mu.Unlock()
	var errs []error
	for _, e := range envs {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}
