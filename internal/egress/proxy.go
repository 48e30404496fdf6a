package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// serve handles one connection from the box: the first byte 0x05 selects
// SOCKS5 (RFC 1928), anything else HTTP/1.1 proxy requests (absolute-URI
// requests are forwarded, CONNECT opens a tunnel; RFC 9110 §9.3.6).
//
// At most Limits.MaxConns connections of the box are served at once; one
// more is closed at once (and logged). The first byte must come within
// Limits.HandshakeTimeout.
func (b *box) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	if !b.conns.reserve(1) {
		b.record(AuditRecord{Proto: "tcp", Decision: "deny",
			Reason: fmt.Sprintf("the box already has %d connections open through the gate (the limit for its terminal.container_memory)", b.limits.MaxConns)})
		return
	}
	defer b.conns.release(1)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(b.limits.HandshakeTimeout))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	bc := &bufferedConn{Conn: c, r: br}
	if first[0] == 0x05 {
		b.serveSOCKS(ctx, bc)
		return
	}
	serveHTTPConn(ctx, bc, &proxyHandler{box: b, ctx: ctx}, b.limits)
}

// bufferedConn is a net.Conn whose reads go through a bufio.Reader that may
// already hold peeked bytes.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the underlying connection when it supports it.
func (c *bufferedConn) CloseWrite() error { return closeWrite(c.Conn) }

func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// serveHTTPConn runs an HTTP/1.1 server on exactly one connection and
// returns when the connection is closed or its hijacking handler returns.
// Header reads, idle keep-alive and header size are bounded by lim.
func serveHTTPConn(ctx context.Context, c net.Conn, h http.Handler, lim Limits) {
	done := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	var hijacked atomic.Bool
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if hijacked.Load() {
				finish()
			}
		}),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateHijacked:
				hijacked.Store(true)
			case http.StateClosed:
				finish()
			}
		},
	}
	l := &oneConnListener{conn: c, done: done}
	go srv.Serve(l)
	<-done
	l.Close()
}

// oneConnListener hands out one connection, then blocks until done.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error { return nil }

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// proxyHandler serves proxy requests from the box. ctx is the connection's
// context: tunnels outlive the CONNECT request, so they use it rather than
// the request's.
type proxyHandler struct {
	box *box
	ctx context.Context
}

func (h *proxyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		h.box.handleConnect(h.ctx, w, r)
		return
	}
	h.box.handleForward(w, r)
}

// splitHostPort parses an authority; defPort applies when it has no port.
func splitHostPort(authority string, defPort int) (string, int, error) {
	host, portStr, err := net.SplitHostPort(authority)
	if err != nil {
		if defPort == 0 {
			return "", 0, fmt.Errorf("%q has no port", authority)
		}
		return strings.Trim(authority, "[]"), defPort, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", authority)
	}
	return host, port, nil
}

// deny answers 403 with the one-line reason and logs the decision.
func (b *box) deny(w http.ResponseWriter, rec AuditRecord, d decision) {
	rec.Decision, rec.Reason = "deny", d.reason
	b.record(rec)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintln(w, d.denyLine())
}

// record stamps and appends an audit record; its text fields are redacted
// like response bodies (every encoding the redactor knows), then
// truncated by the audit log.
func (b *box) record(rec AuditRecord) {
	rec.Time = b.gate.opts.Now().UTC()
	rec.Box = b.task
	rec.Host = b.redactor.String(rec.Host)
	rec.Path = b.redactor.String(rec.Path)
	rec.Reason = b.redactor.String(rec.Reason)
	rec.Error = b.redactor.String(rec.Error)
	b.gate.audit.write(rec) // a failing audit log must not stop traffic
}

func (b *box) handleConnect(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	rec := AuditRecord{Proto: "connect", Method: "CONNECT"}
	host, port, err := splitHostPort(r.Host, 0)
	if err != nil {
		rec.Host = r.Host
		b.deny(w, rec, decision{host: r.Host, reason: "CONNECT needs host:port"})
		return
	}
	rec.Host, rec.Port = strings.ToLower(host), port
	d := b.decide(ctx, host, port)
	rec.Host = d.host
	if !d.allowed {
		b.deny(w, rec, d)
		return
	}
	if len(d.secrets) > 0 {
		b.intercept(ctx, w, d)
		return
	}
	up, err := b.dialPinned(ctx, d)
	if err != nil {
		rec.Decision, rec.Reason, rec.Error = "allow", d.reason, err.Error()
		b.record(rec)
		http.Error(w, "hermes egress: "+b.redactor.String(err.Error()), http.StatusBadGateway)
		return
	}
	defer up.Close()
	rec.Addr = up.RemoteAddr().String()
	client, err := hijackTunnel(w)
	if err != nil {
		return
	}
	defer client.Close()
	var refused string
	rec.BytesOut, rec.BytesIn, refused = b.checkedPipe(client, up)
	rec.Decision, rec.Reason = "allow", d.reason+"; blind tunnel"
	if refused != "" {
		rec.Decision, rec.Reason = "deny", refused
	}
	b.record(rec)
}

// hijackTunnel takes over the connection of a CONNECT request and answers
// 200. Bytes the server had already buffered are replayed, then reads go to
// the raw connection (not through the server's reader, whose read errors
// would cancel the connection's context).
func hijackTunnel(w http.ResponseWriter) (*bufferedConn, error) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		conn.Close()
		return nil, err
	}
	buffered, _ := rw.Reader.Peek(rw.Reader.Buffered())
	return &bufferedConn{Conn: conn, r: bufio.NewReader(io.MultiReader(bytes.NewReader(buffered), conn))}, nil
}

// handleForward forwards an absolute-URI request (plain HTTP proxying, or
// an https:// URL the gate fetches itself). Placeholders are never
// substituted here, but a response from a host bound to secrets goes
// through the same redaction as an intercepted one (reverseProxy).
func (b *box) handleForward(w http.ResponseWriter, r *http.Request) {
	rec := AuditRecord{Proto: "http", Method: r.Method, Path: r.URL.Path}
	if !r.URL.IsAbs() || (r.URL.Scheme != "http" && r.URL.Scheme != "https") {
		host, port, err := splitHostPort(r.Host, 80)
		if err != nil {
			host, port = r.Host, 80
		}
		rec.Host, rec.Port = host, port
		b.deny(w, rec, decision{host: host, port: port, reason: "not a proxy request (absolute http:// URI or CONNECT expected)"})
		return
	}
	defPort := 80
	if r.URL.Scheme == "https" {
		defPort = 443
	}
	host, port, err := splitHostPort(r.URL.Host, defPort)
	if err != nil {
		rec.Host = r.URL.Host
		b.deny(w, rec, decision{host: r.URL.Host, reason: err.Error()})
		return
	}
	d := b.decide(r.Context(), host, port)
	rec.Host, rec.Port = d.host, port
	if !d.allowed {
		b.deny(w, rec, d)
		return
	}
	unsubstituted := placeholdersIn(r, d.secrets)
	counted := &countingBody{ReadCloser: newStallBody(w, r.Body, b.limits.BodyStallTimeout)}
	r.Body = counted
	out := *r.URL
	out.Host = authority(d.host, port, defPort)
	cw := &countingWriter{ResponseWriter: w}
	b.serveProxied(cw, r, d, &rec, &out)
	redactHeader(w.Header(), b.redactorFor(d))
	rec.Decision, rec.Reason = "allow", d.reason
	if len(unsubstituted) > 0 {
		// By design: the gate substitutes only inside TLS it intercepts, so
		// a secret's value never crosses a network in clear text.
		how := "plain HTTP"
		if r.URL.Scheme == "https" {
			how = "absolute-URI proxy request (use CONNECT)"
		}
		rec.Reason += "; placeholder not substituted: " + how + " (" + strings.Join(unsubstituted, ", ") + ")"
	}
	rec.BytesOut, rec.BytesIn = counted.n.Load(), cw.n
	b.record(rec)
}

// placeholdersIn returns the names of the secrets whose placeholders r
// carries in its headers (Basic credentials decoded), path or query;
// handleForward sends them on unchanged and says so in the audit log.
func placeholdersIn(r *http.Request, secrets []*boxSecret) []string {
	if len(secrets) == 0 {
		return nil
	}
	var names []string
	note := func(s string) {
		for _, sec := range secrets {
			if strings.Contains(s, sec.placeholder) && !slices.Contains(names, sec.name) {
				names = append(names, sec.name)
			}
		}
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			note(v)
			if scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok && strings.EqualFold(scheme, "Basic") {
				if plain, ok := decodeBase64(strings.TrimSpace(cred)); ok {
					note(plain)
				}
			}
		}
	}
	note(r.URL.Path)
	note(r.URL.RawQuery)
	if q, err := url.QueryUnescape(r.URL.RawQuery); err == nil {
		note(q)
	}
	slices.Sort(names)
	return names
}

// redactorFor is the box's redactor for a host bound to secrets, nil
// otherwise.
func (b *box) redactorFor(d decision) *redactor {
	if len(d.secrets) > 0 {
		return b.redactor
	}
	return nil
}

func (b *box) upstreamError(rec *AuditRecord) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, _ *http.Request, err error) {
		rec.Error = b.redactor.String(err.Error())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintln(w, "hermes egress: upstream error:", rec.Error)
	}
}

// pinnedKey carries a decision to the transport's dialer.
type pinnedKey struct{}

func withPinned(ctx context.Context, d decision) context.Context {
	return context.WithValue(ctx, pinnedKey{}, d)
}

// newTransport returns the box's upstream transport: it dials only the
// addresses of the decision in the request context (never resolving again)
// and verifies upstream TLS against Options.RootCAs (or the system roots).
func (b *box) newTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil, // never the host's own proxy variables
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d, ok := ctx.Value(pinnedKey{}).(decision)
			if !ok || !d.allowed {
				return nil, errors.New("egress: dial without an allow decision")
			}
			host, port, err := splitHostPort(addr, 0)
			if err != nil || !sameHost(host, d.host) || port != d.port {
				return nil, fmt.Errorf("egress: dial %s does not match the decision for %s", addr, d.host)
			}
			return b.dialPinned(ctx, d)
		},
		TLSClientConfig:       &tls.Config{RootCAs: b.gate.opts.RootCAs},
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
}

func sameHost(a, b string) bool {
	a = strings.ToLower(strings.TrimSuffix(strings.Trim(a, "[]"), "."))
	if ip, err := netip.ParseAddr(a); err == nil {
		a = ip.Unmap().WithZone("").String()
	}
	return a == b
}

// countingBody counts bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// countingWriter counts response body bytes; it keeps Flush working.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
