package sandboxserver

import (
	"context"
	"net/http"
	"testing"

	"github.com/hermes-go/hermes/internal/envd/process"
)

// A Keepalive-Ping-Interval too big for a time.Duration of seconds
// panicked in time.NewTicker (a stack trace in the server's log for a
// header any client sends).
func TestHugeKeepaliveInterval(t *testing.T) {
	sb := &sandbox{paused: make(chan struct{}), procs: map[uint32]*proc{}}
	pr := &proc{subs: map[*subscriber]struct{}{}}
	sub := pr.subscribe()
	sub.push(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: &process.ProcessEvent_EndEvent{Exited: true}}}, 0)
	h := http.Header{}
	h.Set("Keepalive-Ping-Interval", "9223372037")
	var got int
	err := follow(context.Background(), sb, pr, sub, h, func(*process.ProcessEvent) error { got++; return nil })
	if err != nil || got != 1 {
		t.Fatalf("follow: %v after %d events, want the end event", err, got)
	}
}

// Streams nobody reads each queued up to 64 MiB of output: a client
// opening many (a Start per chatty command) held their sum in memory.
// The server-wide budget ends the streams that would pass it, and what
// a stream gives back (read or ended) is usable again.
func TestQueuedOutputHasAServerBudget(t *testing.T) {
	budget := &queueBudget{max: 1 << 20}
	pr := &proc{subs: map[*subscriber]struct{}{}, budget: budget}
	chunk := make([]byte, 256<<10)
	var subs []*subscriber
	for range 8 {
		subs = append(subs, pr.subscribe())
	}
	pr.broadcast(&process.ProcessEvent{}, len(chunk)) // 8 × 256 KiB > 1 MiB
	over := 0
	for _, sub := range subs {
		if _, o := sub.take(); o {
			over++
		}
	}
	if over != 4 {
		t.Fatalf("%d of 8 streams ended, want the 4 past the 1 MiB budget", over)
	}
	for _, sub := range subs {
		pr.unsubscribe(sub)
	}
	if n := budget.used.Load(); n != 0 {
		t.Fatalf("%d bytes still counted after every stream ended", n)
	}
}
