package cron

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkTick measures one tick over a store of 1000 jobs: with none
// due (the ticker's cost every minute) and with 10 due (claim, run with an
// instant agent, output file, ledger).
func BenchmarkTick(b *testing.B) {
	for _, due := range []int{0, 10} {
		b.Run(fmt.Sprintf("1000jobs_%ddue", due), func(b *testing.B) {
			start := date("2026-05-01 08:00")
			now := start
			st := NewStore(b.TempDir(), func() time.Time { return now })
			for i := range 1000 {
				sched := "every 1d"
				if i < due {
					sched = "every 1m"
				}
				if _, err := st.Add(Job{Name: fmt.Sprint("j", i), Schedule: sched, Prompt: "p"}); err != nil {
					b.Fatal(err)
				}
			}
			s := &Scheduler{Store: st, Run: func(context.Context, Job) (string, error) { return "ok", nil }}
			b.ResetTimer()
			for range b.N {
				now = now.Add(time.Minute)
				runs, err := s.Tick(context.Background())
				if err != nil || len(runs) != due {
					b.Fatalf("%d runs, %v", len(runs), err)
				}
			}
		})
	}
}
