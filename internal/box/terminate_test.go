package box

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Terminate gives the command SIGTERM (not the wrapper shell, which then
// reports the command's own exit), so a server in a box can shut down
// cleanly: `hermes box exec` relies on it to drain `hermes gateway run`.
func TestTerminateSendsSIGTERMToTheCommand(t *testing.T) {
	e := startTestBox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Start(ctx, backend.ExecRequest{Command: `sh -c 'trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.05; done'`})
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(string(p.Output()), "ready") {
		if ctx.Err() != nil {
			t.Fatalf("the command never started: %q", p.Output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.(interface{ Terminate() error }).Terminate(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.Contains(string(res.Output), "got-term") {
		t.Fatalf("after Terminate: exit %d signal %q output %q; want the trap's exit 3", res.ExitCode, res.Signal, res.Output)
	}
}
