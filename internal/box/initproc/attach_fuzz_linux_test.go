package initproc

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// decodeAttached reads requests as the init reads an attached connection
// (wire.NewLimitedConn, then checkAttachedRequest) until the stream ends,
// and returns those accepted.
func decodeAttached(data []byte, max uint64) ([]wire.Request, error) {
	fc := wire.NewLimitedConn(readOnly{bytes.NewReader(data)}, max)
	var out []wire.Request
	for {
		var req wire.Request
		if err := fc.Receive(&req); err != nil {
			return out, err
		}
		if checkAttachedRequest(req) == nil {
			out = append(out, req)
		}
	}
}

// readOnly is a reader as a connection that cannot be written to.
type readOnly struct{ io.Reader }

func (readOnly) Write(p []byte) (int, error) { return 0, io.ErrClosedPipe }
func (readOnly) Close() error                { return nil }

func encodeRequests(t testing.TB, reqs ...wire.Request) []byte {
	var buf writeBuffer
	fc := wire.NewConn(&buf)
	for _, r := range reqs {
		if err := fc.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// writeBuffer is a bytes.Buffer as a connection.
type writeBuffer struct{ bytes.Buffer }

func (*writeBuffer) Close() error { return nil }

func TestAttachedConnPassesFramesAndRefusesBigOnes(t *testing.T) {
	data := encodeRequests(t, wire.Request{ID: 1, Op: wire.OpAttach},
		wire.Request{ID: 2, Op: wire.OpExec, Exec: &wire.ExecSpec{Argv: []string{"true"}, Timeout: time.Second}},
		wire.Request{ID: 3, Op: wire.OpStdin, Data: bytes.Repeat([]byte("x"), 100_000)},
		wire.Request{ID: 4, Op: wire.OpSetup, Setup: &wire.InitSpec{Task: "x"}})
	got, _ := decodeAttached(data, 1<<20)
	if len(got) != 2 || got[0].ID != 2 || got[1].ID != 3 || len(got[1].Data) != 100_000 {
		t.Fatalf("accepted %+v: want the exec and the stdin frames only (attach again and setup refused)", got)
	}
	if _, err := decodeAttached(data, 10_000); !errors.Is(err, wire.ErrFrameTooBig) {
		t.Fatalf("a 100 kB frame with a 10 kB limit: %v, want wire.ErrFrameTooBig", err)
	}
	// A length of 2^62 bytes is refused before anything is allocated.
	huge := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}
	if _, err := decodeAttached(huge, wire.MaxAttachFrame); !errors.Is(err, wire.ErrFrameTooBig) {
		t.Fatalf("huge frame length: %v", err)
	}
}

// FuzzAttachedFrames feeds arbitrary bytes to the attached connection's
// parser: it must neither panic nor accept a frame over the limit, setup
// or a second attach.
func FuzzAttachedFrames(f *testing.F) {
	f.Add(encodeRequests(f, wire.Request{ID: 1, Op: wire.OpExec, Exec: &wire.ExecSpec{Argv: []string{"sh", "-c", "true"}, Env: []string{"A=b"}}}))
	f.Add(encodeRequests(f, wire.Request{ID: 1, Op: wire.OpSignal, Signal: 2}, wire.Request{ID: 1, Op: wire.OpResize, Rows: 10, Cols: 20}))
	f.Add(encodeRequests(f, wire.Request{ID: 7, Op: wire.OpWriteFile, Path: "/tmp/x", Data: []byte("hi"), Perm: 0o644}))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40})
	f.Add([]byte{0x80})
	f.Add([]byte{0x03, 0x12, 0x05, 'e'}) // a field cut short
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 4096
		got, _ := decodeAttached(data, limit)
		for _, r := range got {
			switch r.Op {
			case wire.OpSetup, wire.OpAttach, wire.OpDial:
				t.Fatalf("accepted %q on an attached connection", r.Op)
			case wire.OpExec:
				if r.Exec == nil || len(r.Exec.Argv) == 0 {
					t.Fatal("accepted an exec without a command")
				}
			}
			if len(r.Data) > limit || len(r.Path) > limit {
				t.Fatalf("accepted %d+%d bytes through a %d-byte frame limit", len(r.Data), len(r.Path), limit)
			}
		}
	})
}
