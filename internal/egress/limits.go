package egress

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Limits bounds what one box can take from the host through the gate. The
// gate runs in the host-side hermes process, outside the box's cgroup, so
// these are what keep a hostile box from exhausting host memory and file
// descriptors through it.
type Limits struct {
	// MaxConns is the number of connections from the box served at once
	// (each holds about two file descriptors: the box side and the
	// upstream). Further connections are closed at once and logged.
	MaxConns int
	// MaxBuffered is the number of request-body bytes held in memory at once
	// for placeholder substitution, over all the box's requests to secret
	// hosts. A body that does not fit is refused with 413.
	MaxBuffered int64
	// MaxBodyBuffer is the largest single request body (known length) that
	// is substituted in memory to keep its Content-Length; longer bodies
	// are substituted while streaming and sent chunked.
	MaxBodyBuffer int64
	// MaxHeaderBytes bounds a request's header block (request line
	// included), as http.Server.MaxHeaderBytes.
	MaxHeaderBytes int
	// HandshakeTimeout bounds the TLS handshake with the box on an
	// intercepted connection, the SOCKS5 negotiation and the wait for a
	// connection's first byte.
	HandshakeTimeout time.Duration
	// HeaderTimeout bounds reading one request's header block.
	HeaderTimeout time.Duration
	// BodyStallTimeout is the longest wait for the next bytes of a request
	// body; a stalled upload is cut off then.
	BodyStallTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request.
	IdleTimeout time.Duration
}

// connMemoryEstimate is the gate memory a served connection costs at most
// apart from buffered bodies (goroutines, TLS and bufio buffers, header
// block), used to size MaxConns.
const connMemoryEstimate = 384 << 10

// LimitsForMemory derives a box's limits from its memory limit in MiB
// (terminal.container_memory; <= 0 means the default 5120): the gate may
// hold about a quarter of it for the box, half of that as substitution
// buffers (4 MiB to 256 MiB) and the rest as connections (32 to 512).
func LimitsForMemory(mib int) Limits {
	if mib <= 0 {
		mib = 5120
	}
	budget := int64(mib) << 20 / 4
	buffered := min(max(budget/2, 4<<20), 256<<20)
	conns := min(max(int((budget-buffered)/connMemoryEstimate), 32), 512)
	return Limits{
		MaxConns:         conns,
		MaxBuffered:      buffered,
		MaxBodyBuffer:    min(buffered/2, 8<<20),
		MaxHeaderBytes:   128 << 10,
		HandshakeTimeout: 10 * time.Second,
		HeaderTimeout:    30 * time.Second,
		BodyStallTimeout: 30 * time.Second,
		IdleTimeout:      2 * time.Minute,
	}
}

// MemoryCap is the gate memory these limits allow one box to pin: the
// buffer budget plus MaxConns connections.
func (l Limits) MemoryCap() int64 {
	return l.MaxBuffered + int64(l.MaxConns)*connMemoryEstimate
}

// withDefaults fills zero fields from LimitsForMemory(mib).
func (l Limits) withDefaults(mib int) Limits {
	d := LimitsForMemory(mib)
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxBuffered <= 0 {
		l.MaxBuffered = d.MaxBuffered
	}
	if l.MaxBodyBuffer <= 0 {
		l.MaxBodyBuffer = min(d.MaxBodyBuffer, l.MaxBuffered)
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = d.HandshakeTimeout
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = d.HeaderTimeout
	}
	if l.BodyStallTimeout <= 0 {
		l.BodyStallTimeout = d.BodyStallTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	return l
}

// budget is a counter of bytes or slots that may not exceed limit.
type budget struct {
	limit int64
	n     atomic.Int64
}

func (b *budget) reserve(n int64) bool {
	for {
		cur := b.n.Load()
		if cur+n > b.limit {
			return false
		}
		if b.n.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

func (b *budget) release(n int64) { b.n.Add(-n) }

func (b *budget) used() int64 { return b.n.Load() }

// stallBody is a request body whose every read must make progress within
// stall: it sets the connection's read deadline before each read (and
// clears it at the end of the body, since the server reads on between
// requests; after a failed read it stays expired, so the server does not
// wait for the rest of the body either).
type stallBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	stall time.Duration
}

func newStallBody(w http.ResponseWriter, body io.ReadCloser, stall time.Duration) io.ReadCloser {
	return &stallBody{ReadCloser: body, rc: http.NewResponseController(w), stall: stall}
}

func (s *stallBody) Read(p []byte) (int, error) {
	s.rc.SetReadDeadline(time.Now().Add(s.stall))
	n, err := s.ReadCloser.Read(p)
	if err == io.EOF {
		s.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// chunkBody is a request body held in memory as the chunks it arrived in
// (no doubling growth: memory stays near the bytes read).
type chunkBody struct {
	chunks [][]byte
	size   int64
}

// readChunked reads r to the end into a chunkBody; want is the expected
// size, used only to size the first chunk.
func readChunked(r io.Reader, want int64) (*chunkBody, error) {
	const chunk = 64 << 10
	b := &chunkBody{}
	for {
		buf := make([]byte, min(max(want-b.size, 512), chunk))
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			b.chunks = append(b.chunks, buf[:n])
			b.size += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (b *chunkBody) Read(p []byte) (int, error) {
	for len(b.chunks) > 0 && len(b.chunks[0]) == 0 {
		b.chunks = b.chunks[1:]
	}
	if len(b.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.chunks[0])
	b.chunks[0] = b.chunks[0][n:]
	return n, nil
}

func (b *chunkBody) Close() error { b.chunks = nil; return nil }
