package box

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

func TestZZScratch(t *testing.T) {
	opts := Options{Terminal: testTerminal(t.TempDir()), Home: t.TempDir()}
	tr := true
	opts.Terminal.ContainerPersistent = &tr
	if exe := os.Getenv("HERMES_BOX_BENCH_INIT"); exe != "" {
		opts.Executable = exe
	}
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		task := fmt.Sprintf("s%d", i)
		t0 := time.Now()
		env, err := m.Open(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		env.Exec(ctx, backend.ExecRequest{Command: "true"})
		t2 := time.Now()
		env.Exec(ctx, backend.ExecRequest{Command: "true"})
		t3 := time.Now()
		b, _ := m.Box(ctx, task)
		m.Stop(task)
		t4 := time.Now()
		log, _ := os.ReadFile(filepath.Join(m.StateDir(task), "init.log"))
		t.Logf("open %v first %v second %v stop %v phases %+v %s", t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), b.StartPhases(), log)
		m.Remove(task)
	}
}
