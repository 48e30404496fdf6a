package initproc

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// A command's output already in the pipe when finish's grace deadline
// passes is still sent: on a loaded machine the pump may not have read
// anything by then (regression: `echo hi` through the E2B SDK answered ""
// under load, issue 29's fleet proof with 60 sandboxes). The pipe's write
// end stays open, as a background child of the command would keep it.
func TestPumpSendsBufferedOutputPastTheGraceDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now()) // the grace ended before the pump ran
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := &initServer{buffers: sync.Pool{New: func() any { buf := make([]byte, outputChunk); return &buf }}}
	p := &initProc{id: 7, conn: &initConn{fc: wire.NewConn(a)}}
	done := make(chan struct{})
	go s.pump(p, r, 1, done)
	go func() { <-done; a.Close() }() // a pump that sent nothing: Receive fails, no hang
	var got wire.Response
	if err := wire.NewConn(b).Receive(&got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != wire.KindOutput || string(got.Data) != "hi\n" || got.ID != 7 || got.Stream != 1 {
		t.Fatalf("got %+v, want the output frame of %q", got, "hi\n")
	}
	<-done // and the pump ends without waiting for the open write end
}
