package local

import (
	"context"
	"io"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// A command that exits is seen to exit while the reader of its standard
// input stays open (an MCP client's pipe): os/exec's own copy made Wait
// wait for that reader, so a session's MCP server whose command failed
// was noticed only at its connect timeout (TestMCPEnvSecretNeverStored
// took 60 s, and failed in CI when that wait let another server idle
// out).
func TestExitIsSeenWhileStdinStaysOpen(t *testing.T) {
	b, err := New(t.TempDir(), nil, func() []string { return []string{"PATH=/usr/bin:/bin"} })
	if err != nil {
		t.Fatal(err)
	}
	env, err := b.Open(context.Background(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	stdin, stdinW := io.Pipe()
	defer stdinW.Close()
	out, outW := io.Pipe()
	go io.Copy(io.Discard, out)
	p, err := env.Start(context.Background(), backend.ExecRequest{Command: "exec /nonexistent/server", Stdin: stdin, Output: outW, DiscardOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(waitfor.Context(t))
	if err != nil || res.ExitCode != 127 {
		t.Fatalf("the failed command's end: exit %d, %v; want 127 while its stdin is still open", res.ExitCode, err)
	}
	res, err = env.Exec(waitfor.Context(t), backend.ExecRequest{Command: "cat", Stdin: oneLine()})
	if err != nil || string(res.Output) != "fed\n" {
		t.Fatalf("a reader as stdin of Exec: %q %v", res.Output, err)
	}
}

// oneLine is a reader that yields one line and ends.
func oneLine() io.Reader {
	r, w := io.Pipe()
	go func() {
		w.Write([]byte("fed\n"))
		w.Close()
	}()
	return r
}
