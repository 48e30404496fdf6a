package box

import (
	"context"
	"fmt"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
)

// BenchmarkBoxCreateFirstCommand measures starting a box (non-persistent,
// tmpfs layer, host base) and running `true` in it, then closing it.
func BenchmarkBoxCreateFirstCommand(b *testing.B) {
	needBoxes(b)
	home, ws := b.TempDir(), b.TempDir()
	m, err := NewManager(Options{Terminal: testTerminal(ws), Home: home})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		task := fmt.Sprintf("bench-%d", i)
		env, err := m.Open(ctx, task)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := env.Exec(ctx, backend.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		b.StopTimer()
		m.Stop(task)
		b.StartTimer()
	}
}

// BenchmarkBoxWarmCommand measures one `true` in a running box.
func BenchmarkBoxWarmCommand(b *testing.B) {
	e := startTestBox(b, nil)
	ctx := context.Background()
	req := backend.ExecRequest{Command: "true"}
	for b.Loop() {
		if res, err := e.env.Exec(ctx, req); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}
