package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
)

// maxBufferedBody is the largest request body with a known length that is
// substituted in memory (keeping a Content-Length); larger or unknown
// lengths are substituted while streaming and sent chunked.
const maxBufferedBody = 8 << 20

// intercept terminates the box's TLS for a host bound to secrets with a leaf
// of the box CA, then serves the HTTP/1.1 requests inside: placeholders of
// the host's secrets become real values in the path, query, headers and
// body, and every secret value of the box is redacted from responses
// (headers and body) back to its placeholder.
func (b *box) intercept(ctx context.Context, w http.ResponseWriter, d decision) {
	rec := AuditRecord{Proto: "connect", Method: "CONNECT", Host: d.host, Port: d.port}
	conn, err := hijackTunnel(w)
	if err != nil {
		return
	}
	defer conn.Close()
	leaf, err := b.ca.leaf(d.host)
	if err != nil {
		rec.Decision, rec.Reason, rec.Error = "allow", d.reason, err.Error()
		b.record(rec)
		return
	}
	tconn := tls.Server(conn, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	var names []string
	for _, s := range d.secrets {
		names = append(names, s.name)
	}
	rec.Decision, rec.Reason = "allow", d.reason+"; TLS intercepted for secrets "+strings.Join(names, ",")
	if err := tconn.HandshakeContext(ctx); err != nil {
		rec.Error = "TLS handshake with the box failed (does the box trust " + CACertPath + "?): " + err.Error()
		b.record(rec)
		return
	}
	b.record(rec)
	serveHTTPConn(ctx, tconn, &interceptHandler{box: b, d: d})
}

// interceptHandler serves the requests inside one intercepted connection.
type interceptHandler struct {
	box *box
	d   decision
}

func (h *interceptHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, d := h.box, h.d
	rec := AuditRecord{Proto: "https", Method: r.Method, Host: d.host, Port: d.port, Path: r.URL.Path}
	host, port, err := splitHostPort(r.Host, d.port)
	if err != nil || !sameHost(host, d.host) || port != d.port {
		b.deny(w, rec, decision{host: d.host, port: d.port,
			reason: fmt.Sprintf("Host header %q does not match the CONNECT host", r.Host)})
		return
	}
	if r.Header.Get("Upgrade") != "" {
		b.deny(w, rec, decision{host: d.host, port: d.port,
			reason: "protocol upgrades (WebSocket) to a host bound to secrets are refused, because their frames cannot be rewritten"})
		return
	}
	raw := substitutions(d.secrets, func(v string) string { return v })
	used := map[string]bool{}
	note := func(s string) {
		for _, sec := range d.secrets {
			if strings.Contains(s, sec.placeholder) {
				used[sec.name] = true
			}
		}
	}
	for k, vs := range r.Header {
		for i, v := range vs {
			note(v)
			vs[i] = replaceString(v, raw)
		}
		r.Header[k] = vs
	}
	note(r.URL.RawQuery)
	note(r.URL.Path)
	r.URL.RawQuery = replaceString(r.URL.RawQuery, substitutions(d.secrets, url.QueryEscape))
	r.URL.Path = replaceString(r.URL.Path, raw)
	r.URL.RawPath = replaceString(r.URL.RawPath, substitutions(d.secrets, url.PathEscape))
	// Let the transport negotiate gzip and decode it, so that redaction
	// sees plain bytes.
	r.Header.Del("Accept-Encoding")

	var bodyReader *replacingReader
	var counted *countingBody
	if r.ContentLength != 0 {
		counted = &countingBody{ReadCloser: r.Body}
		bodyReader = newReplacingReader(counted, substitutions(d.secrets, bodyEscaper(r.Header.Get("Content-Type"))))
		if r.ContentLength > 0 && r.ContentLength <= maxBufferedBody {
			body, err := io.ReadAll(bodyReader)
			if err != nil {
				b.deny(w, rec, decision{host: d.host, port: d.port, reason: "reading the request body: " + err.Error()})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		} else {
			r.Body = bodyReader
			r.ContentLength = -1
			r.Header.Del("Content-Length")
		}
	}

	redact := redactions(b.secrets)
	upstream := &url.URL{Scheme: "https", Host: d.host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	if d.port != 443 {
		upstream.Host = net.JoinHostPort(d.host, strconv.Itoa(d.port))
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = upstream
			pr.Out.Host = r.Host
		},
		Transport:    b.transport,
		ErrorLog:     log.New(io.Discard, "", 0),
		ErrorHandler: b.upstreamError(&rec),
		ModifyResponse: func(resp *http.Response) error {
			rec.Status = resp.StatusCode
			if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
				return fmt.Errorf("response Content-Encoding %q cannot be inspected to redact secrets", ce)
			}
			for k, vs := range resp.Header {
				for i, v := range vs {
					vs[i] = replaceString(v, redact)
				}
				resp.Header[k] = vs
			}
			resp.Body = newReplacingReader(resp.Body, redact)
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
			return nil
		},
	}
	cw := &countingWriter{ResponseWriter: w}
	rp.ServeHTTP(cw, r.WithContext(withPinned(r.Context(), d)))
	if bodyReader != nil {
		for _, sec := range d.secrets {
			if bodyReader.replacedAny(sec.placeholder) {
				used[sec.name] = true
			}
		}
		rec.BytesOut = counted.n.Load()
	}
	for _, sec := range d.secrets {
		if used[sec.name] {
			rec.Secrets = append(rec.Secrets, sec.name)
		}
	}
	rec.Decision, rec.Reason, rec.BytesIn = "allow", d.reason+"; intercepted", cw.n
	b.record(rec)
}

// substitutions maps each placeholder to its secret's value, encoded for
// the place it lands in (query, path, form or JSON body).
func substitutions(secrets []*boxSecret, encode func(string) string) []replacement {
	reps := make([]replacement, 0, len(secrets))
	for _, s := range secrets {
		reps = append(reps, replacement{old: s.placeholder, new: encode(s.value)})
	}
	return reps
}

// bodyEscaper picks the encoding of a secret value inside a request body of
// the given Content-Type: percent-encoding for forms, JSON string escaping
// for JSON, the raw value otherwise.
func bodyEscaper(contentType string) func(string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/x-www-form-urlencoded":
		return url.QueryEscape
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return jsonEscape
	}
	return func(v string) string { return v }
}

// jsonEscape returns v escaped as the inside of a JSON string.
func jsonEscape(v string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	out := strings.TrimSpace(buf.String())
	return out[1 : len(out)-1]
}

// redactions maps every secret value of the box, raw and in its common
// encodings (percent, path, JSON), back to its placeholder.
func redactions(secrets []*boxSecret) []replacement {
	var reps []replacement
	for _, s := range secrets {
		seen := map[string]bool{}
		for _, v := range []string{s.value, url.QueryEscape(s.value), url.PathEscape(s.value), jsonEscape(s.value)} {
			if v != "" && !seen[v] {
				seen[v] = true
				reps = append(reps, replacement{old: v, new: s.placeholder})
			}
		}
	}
	return reps
}
