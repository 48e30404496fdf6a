package sandboxserver

import (
	"io"
	"net/http"
	"time"
)

// minBodyRate is the slowest average upload rate a request body may keep
// (bytes per second) once its Config.BodyTimeout has passed.
const minBodyRate = 64 << 10

// boundBodyTime bounds the time a request body may take to arrive:
// Config.BodyTimeout, plus a second per minBodyRate bytes received. The
// listeners' ReadHeaderTimeout bounds the headers only, and a
// ReadTimeout would also end the command streams of envd, so without
// this a client that sent headers and then trickled (or never sent) the
// body held its connection and goroutine forever, with or without a key
// (net/http reads an unread body before it answers). Once the body has
// been read, the connection has no read deadline again (a stream may run
// for hours).
func (s *Server) boundBodyTime(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			start := time.Now()
			if rc.SetReadDeadline(start.Add(s.cfg.BodyTimeout)) == nil {
				r.Body = &timedBody{ReadCloser: r.Body, rc: rc, start: start, grace: s.cfg.BodyTimeout}
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
		b.rc.SetReadDeadline(b.start.Add(b.grace + time.Duration(b.n/minBodyRate)*time.Second))
	}
	return n, err
}
