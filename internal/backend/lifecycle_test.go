package backend

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

type closeRecorder struct {
	strings.Builder
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// The contract the backends' Process implementations rely on: Kill asks
// the wait loop and returns after Finish; Wait with an ended context
// leaves the process running; stdin stops at exit and closes once.
func TestLifecycle(t *testing.T) {
	out := NewCapture(1<<10, 1<<10)
	stdin := &closeRecorder{}
	l := NewLifecycle(out, stdin, time.Now())
	if _, err := l.Write([]byte("in")); err != nil || stdin.String() != "in" {
		t.Fatalf("Write = %v, stdin %q", err, stdin.String())
	}
	_, _ = io.WriteString(out, "partial")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := l.Wait(ctx)
	if !errors.Is(err, context.Canceled) || res.ExitCode != -1 || string(res.Output) != "partial" || l.Done() {
		t.Fatalf("Wait(cancelled) = %+v, %v, done %v; want exit -1, the output so far, still running", res, err, l.Done())
	}

	killed := make(chan error, 1)
	go func() { killed <- l.Kill() }()
	select {
	case <-l.Killed(): // the wait loop sees the request and ends the process
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatal("Kill did not signal the wait loop")
	}
	if !l.KillRequested() {
		t.Fatal("KillRequested = false after Kill")
	}
	l.Finish(ExecResult{ExitCode: -1, Signal: "SIGTERM"})
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	if err := l.Kill(); err != nil { // an exited process: no-op
		t.Fatal(err)
	}
	res, err = l.Wait(context.Background())
	if err != nil || res.Signal != "SIGTERM" || string(res.Output) != "partial" || !l.Done() {
		t.Fatalf("Wait after exit = %+v, %v", res, err)
	}
	if _, err := l.Write([]byte("late")); err == nil {
		t.Fatal("Write after exit succeeded")
	}
	if err := l.CloseStdin(); err != nil || !stdin.closed {
		t.Fatalf("CloseStdin = %v, closed %v", err, stdin.closed)
	}
	if _, err := l.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Write after CloseStdin = %v", err)
	}
}
