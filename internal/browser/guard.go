package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// guardProxy is the SSRF guard of a host browser (Hermes
// security.allow_private_urls: false): a forward proxy on loopback that
// Chromium must send every request through (the flags of guardFlags), and
// that dials only addresses check allows. Checking the address dialed, not
// the URL, covers redirects, subresources, fetch/XHR, WebSockets and DNS
// rebinding alike; Chromium resolves no names itself behind a proxy.
type guardProxy struct {
	ln     net.Listener
	srv    *http.Server
	dialer *net.Dialer
	tr     *http.Transport

	mu      sync.Mutex
	refused map[string]string // authority → why its last dial was refused
}

// guardIdle bounds a proxied connection without traffic, and a request's
// headers.
const guardIdle = 2 * time.Minute

// startGuard starts a guard proxy on 127.0.0.1 refusing dials to
// addresses check rejects.
func startGuard(check func(netip.Addr) error) (*guardProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the browser's address guard: %w", err)
	}
	g := &guardProxy{ln: ln, refused: map[string]string{}}
	g.dialer = &net.Dialer{Timeout: 15 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if err := check(ap.Addr()); err != nil {
			return refusedAddr{err}
		}
		return nil
	}}
	g.tr = &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return g.dial(ctx, addr) }, TLSHandshakeTimeout: 15 * time.Second,
		ResponseHeaderTimeout: DefaultCommandTimeout, MaxIdleConnsPerHost: 4, IdleConnTimeout: guardIdle}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: 1 << 20, IdleTimeout: guardIdle}
	go g.srv.Serve(ln)
	return g, nil
}

// flags are the Chromium switches that route all its traffic through g:
// the proxy, no implicit loopback bypass, and WebRTC kept off direct UDP.
func (g *guardProxy) flags() []string {
	return []string{"--proxy-server=http://" + g.ln.Addr().String(), "--proxy-bypass-list=<-loopback>",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "--webrtc-ip-handling-policy=disable_non_proxied_udp"}
}

func (g *guardProxy) close() {
	_ = g.srv.Close()
	g.tr.CloseIdleConnections()
}

// why returns the refusal recorded for host:port, or "".
func (g *guardProxy) why(host, port string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[net.JoinHostPort(host, port)]
}

func (g *guardProxy) dial(ctx context.Context, authority string) (net.Conn, error) {
	c, err := g.dialer.DialContext(ctx, "tcp", authority)
	if err != nil {
		var msg string
		var ra refusedAddr
		if errors.As(err, &ra) {
			msg = fmt.Sprintf("refused: %s: %v; the browser opens public pages only (security.allow_private_urls: true allows it)", authority, ra.err)
		}
		g.mu.Lock()
		if msg != "" {
			if len(g.refused) >= 1000 { // a page can make up names without end
				clear(g.refused)
			}
			g.refused[authority] = msg
		}
		g.mu.Unlock()
		if msg != "" {
			return nil, errors.New(msg)
		}
	}
	return c, err
}

// ServeHTTP proxies one request: CONNECT tunnels and plain http.
func (g *guardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		g.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "the browser's address guard proxies http:// only", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	resp, err := g.tr.RoundTrip(out)
	if err != nil {
		if i := strings.Index(err.Error(), "refused: "); i >= 0 {
			http.Error(w, "hermes browser "+err.Error()[i:], http.StatusForbidden)
			return
		}
		http.Error(w, "hermes browser: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// tunnel serves CONNECT (https, wss) to an allowed address.
func (g *guardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || host == "" {
		http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	if _, err := strconv.Atoi(port); err != nil {
		http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	up, err := g.dial(ctx, r.Host)
	cancel()
	if err != nil {
		http.Error(w, "hermes browser "+err.Error(), http.StatusForbidden)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	_, _ = rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
	_ = rw.Flush()
	go func() {
		_, _ = io.Copy(up, rw) // rw holds anything read past the headers
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(conn, up)
	conn.Close()
	up.Close()
}

// refusedAddr is a dial the guard refused.
type refusedAddr struct{ err error }

func (r refusedAddr) Error() string { return r.err.Error() }
