package ociimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// defaultStallTimeout is how long a registry may send nothing (no
// response header, no body byte) before the pull fails.
const defaultStallTimeout = 60 * time.Second

// errStalled is the cause a stalled pull is cancelled with.
var errStalled = errors.New("the registry sent nothing")

// newTransport returns the HTTP transport for registries: connect and
// TLS handshakes bounded, response headers within stall, proxies from
// the environment, and plain HTTP refused unless the host is loopback or
// listed in insecure (host or host:port).
func newTransport(stall time.Duration, insecure []string) http.RoundTripper {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: stall,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
	}
	allowed := map[string]bool{}
	for _, h := range insecure {
		if h = strings.TrimSpace(h); h != "" {
			allowed[strings.ToLower(h)] = true
		}
	}
	return &plainHTTPGuard{next: base, allowed: allowed}
}

// plainHTTPGuard refuses http:// requests to hosts that are neither
// loopback nor listed: go-containerregistry falls back to HTTP for
// private-range and .local registries on its own, and a registry reached
// in the clear can serve anything.
type plainHTTPGuard struct {
	next    http.RoundTripper
	allowed map[string]bool
}

func (g *plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" {
		host := strings.ToLower(req.URL.Host)
		if !isLoopbackHost(req.URL.Hostname()) && !g.allowed[host] && !g.allowed[strings.ToLower(req.URL.Hostname())] {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("registry %s would be reached over plain HTTP, which is allowed only for loopback registries and those listed in terminal.box_insecure_registries", req.URL.Host)
		}
	}
	return g.next.RoundTrip(req)
}

// isLoopbackHost reports whether host (no port) is localhost or a
// loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// stallWatch cancels a pull whose registry stops sending: every read
// through watch re-arms a timer of d; when it fires, cancel is called
// with errStalled.
type stallWatch struct {
	mu     sync.Mutex
	timer  *time.Timer
	d      time.Duration
	cancel context.CancelCauseFunc
}

func newStallWatch(d time.Duration, cancel context.CancelCauseFunc) *stallWatch {
	return &stallWatch{d: d, cancel: cancel}
}

// arm starts (or restarts) the timer.
func (w *stallWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(w.d, func() { w.cancel(errStalled) })
		return
	}
	w.timer.Reset(w.d)
}

// stop disarms the timer.
func (w *stallWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// watch wraps r so that each read that returns data re-arms w.
func (w *stallWatch) watch(r io.Reader) io.Reader { return &stallReader{r: r, w: w} }

type stallReader struct {
	r io.Reader
	w *stallWatch
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.w.arm()
	}
	return n, err
}
