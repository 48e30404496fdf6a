package sandboxserver

import (
	"context"
	"net/http"
	"testing"

	"github.com/hermes-go/hermes/internal/sandboxserver/envd/process"
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
