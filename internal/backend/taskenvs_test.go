package backend

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

type fakeEnv struct {
	task   string
	closed atomic.Int32
	err    error
}

func (f *fakeEnv) Close() error { f.closed.Add(1); return f.err }

// One environment per task however many Opens race; a failed create is
// retried; Close closes each once, joins their errors and refuses later
// Opens with the backend's kind.
func TestTaskEnvsOpenOncePerTaskAndCloseAll(t *testing.T) {
	envs := NewTaskEnvs[*fakeEnv]("docker")
	var created atomic.Int32
	create := func(task string) func() (*fakeEnv, error) {
		return func() (*fakeEnv, error) { created.Add(1); return &fakeEnv{task: task}, nil }
	}
	var wg sync.WaitGroup
	got := make([]*fakeEnv, 16)
	for i := range got {
		wg.Go(func() {
			e, err := envs.Open("t1", create("t1"))
			if err != nil {
				t.Error(err)
			}
			got[i] = e
		})
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("16 racing Opens of one task created %d environments", created.Load())
	}
	for _, e := range got {
		if e != got[0] || e.task != "t1" {
			t.Fatalf("Opens of one task returned different environments")
		}
	}

	boom := errors.New("no sandbox quota")
	if _, err := envs.Open("t2", func() (*fakeEnv, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("failed create: %v", err)
	}
	failing := &fakeEnv{task: "t2", err: errors.New("container rm failed")}
	if e, err := envs.Open("t2", func() (*fakeEnv, error) { return failing, nil }); err != nil || e != failing {
		t.Fatalf("the retry after a failed create: %v, %v", e, err)
	}

	err := envs.Close()
	if err == nil || !strings.Contains(err.Error(), "container rm failed") {
		t.Errorf("Close = %v, want the environment's error", err)
	}
	if got[0].closed.Load() != 1 || failing.closed.Load() != 1 {
		t.Errorf("closed t1 %d times, t2 %d times", got[0].closed.Load(), failing.closed.Load())
	}
	if _, err := envs.Open("t3", create("t3")); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "docker backend is closed") {
		t.Errorf("Open after Close = %v", err)
	}
	if err := envs.Close(); err != nil || got[0].closed.Load() != 1 {
		t.Errorf("a second Close: %v, t1 closed %d times", err, got[0].closed.Load())
	}
}
