package httpguard

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Server timeouts of NewServer.
const (
	// ReadHeaderTimeout bounds the time from a connection's start (or the
	// end of its previous request) to the end of a request's headers: a
	// connection that sends nothing is closed after it.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection idle this long (clients
	// reuse theirs within seconds: Node's agents drop theirs after 4-5 s).
	IdleTimeout = 20 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
	// DefaultBodyTimeout is BodyDeadline's default grace.
	DefaultBodyTimeout = 30 * time.Second
	// MinBodyRate is the slowest average rate a request body may keep
	// (bytes per second) once BodyDeadline's grace has passed.
	MinBodyRate = 64 << 10
)

// NewServer returns an http.Server for h with the header, idle and header
// size bounds above. It sets no ReadTimeout or WriteTimeout: a ReadTimeout
// also cancels the request's context once it passes after the body was
// read (net/http's background read fails), which ended long answers and
// command streams; wrap h in BodyDeadline to bound body reads instead.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: MaxHeaderBytes}
}

// BodyDeadline bounds the time a request body may take to arrive: grace
// (DefaultBodyTimeout when 0), plus a second per MinBodyRate bytes
// received. Without it, a client that sent headers and then trickled (or
// never sent) its body held its connection and goroutine forever (net/http
// reads an unread body before it answers). Once the body has been read the
// connection has no read deadline again, so an answer or a stream may run
// for hours.
func BodyDeadline(h http.Handler, grace time.Duration) http.Handler {
	if grace <= 0 {
		grace = DefaultBodyTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			start := time.Now()
			if rc.SetReadDeadline(start.Add(grace)) == nil {
				r.Body = &timedBody{ReadCloser: r.Body, rc: rc, start: start, grace: grace}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// timedBody moves the read deadline on as the body arrives and lifts it
// at the body's end.
type timedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	n     int64
	ended bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	switch {
	case b.ended:
	case err == io.EOF:
		// The whole body is in: lift the deadline (only then, so that
		// what net/http reads of an unread body stays bounded).
		b.ended = true
		b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		b.ended = true
	case n > 0:
		b.rc.SetReadDeadline(b.start.Add(b.grace + time.Duration(b.n/MinBodyRate)*time.Second))
	}
	return n, err
}

// Budget bounds the request-body bytes a server holds at once, all
// requests together: a request reserves what its body may take before
// reading it and gives it back once parsed. A reservation that does not
// fit at once fails with ErrBusy instead of waiting: the caller answers
// 503 with Retry-After (RetryAfterSeconds) and Connection: close. Waiting
// let a few stalled bodies, each holding a large reservation until
// BodyDeadline ended it (~30 s), queue every other request behind them.
type Budget struct {
	max  int64
	sem  *semaphore.Weighted
	held atomic.Int64
}

// ErrBusy is Reserve's error when the budget has no room at once.
var ErrBusy = errors.New("the server is reading too many request bodies; try again")

// RetryAfterSeconds is the Retry-After (seconds) to send with ErrBusy's 503.
const RetryAfterSeconds = "1"

// NewBudget returns a Budget of max bytes.
func NewBudget(max int64) *Budget { return &Budget{max: max, sem: semaphore.NewWeighted(max)} }

// Reserve takes n bytes (at most the whole budget; negative counts as 0)
// if they are free now and returns the function that frees them (call it
// once; later calls do nothing). It returns ErrBusy without waiting when
// they are not free.
func (b *Budget) Reserve(n int64) (release func(), err error) {
	n = min(max(n, 0), b.max)
	if !b.sem.TryAcquire(n) {
		return nil, ErrBusy
	}
	b.held.Add(n)
	return sync.OnceFunc(func() { b.held.Add(-n); b.sem.Release(n) }), nil
}

// Held reports the bytes reserved now (0 to the budget's max). It is a
// reading, not a promise: a Reserve may fit or fail right after it.
func (b *Budget) Held() int64 { return b.held.Load() }

// RefuseBusy sets the headers of the 503 answering ErrBusy: Retry-After,
// and Connection: close, so that net/http does not read the unread body
// before answering. The caller writes the status and the body.
func RefuseBusy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", RetryAfterSeconds)
	w.Header().Set("Connection", "close")
}
