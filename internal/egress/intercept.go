package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// intercept terminates the box's TLS for a host bound to secrets (after
// CONNECT) and serves the requests inside; see interceptConn.
func (b *box) intercept(ctx context.Context, w http.ResponseWriter, d decision) {
	conn, err := hijackTunnel(w)
	if err != nil {
		return
	}
	defer conn.Close()
	b.interceptConn(ctx, conn, d, "connect")
}

// interceptConn terminates the box's TLS on conn with a leaf of the box CA
// for d.host, then serves the HTTP/1.1 requests inside: placeholders of the
// host's secrets become real values in the path, query, headers and body,
// and every secret value of the box is redacted from responses (see
// secretResponse). proto names the way in for the audit log (connect or
// socks5). The handshake must finish within Limits.HandshakeTimeout.
func (b *box) interceptConn(ctx context.Context, conn net.Conn, d decision, proto string) {
	rec := AuditRecord{Proto: proto, Method: "CONNECT", Host: d.host, Port: d.port}
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
	conn.SetDeadline(time.Now().Add(b.limits.HandshakeTimeout))
	if err := tconn.HandshakeContext(ctx); err != nil {
		rec.Error = "TLS handshake with the box failed (does the box trust " + CACertPath + "?): " + err.Error()
		b.record(rec)
		return
	}
	conn.SetDeadline(time.Time{})
	b.record(rec)
	serveHTTPConn(ctx, tconn, &interceptHandler{box: b, d: d}, b.limits)
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
	used := substituteRequest(r, d.secrets)
	bodyReader, counted, release, status, why := b.substituteBody(w, r, d.secrets)
	defer release()
	if status != 0 {
		rec.Decision, rec.Reason, rec.Status = "deny", why, status
		b.record(rec)
		w.Header().Set("Connection", "close")
		http.Error(w, "hermes egress: "+why, status)
		return
	}

	upstream := &url.URL{Scheme: "https", Host: authority(d.host, d.port, 443), Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	cw := &countingWriter{ResponseWriter: w}
	b.serveProxied(cw, r, d, &rec, upstream)
	// Trailers: the reverse proxy copied them into the header map after
	// the body; the server sends them when this handler returns.
	redactHeader(w.Header(), b.redactor)
	if bodyReader != nil {
		for _, sec := range d.secrets {
			if bodyReader.replacedAny(sec.placeholder) {
				used[sec.name] = true
			}
		}
	}
	if counted != nil {
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

// substituteRequest swaps placeholders of secrets for their values in the
// headers (Basic credentials too), path and query of r, and returns the
// names of the secrets it used.
func substituteRequest(r *http.Request, secrets []*boxSecret) map[string]bool {
	raw := substitutions(secrets, func(v string) string { return v })
	used := map[string]bool{}
	note := func(s string) {
		for _, sec := range secrets {
			if strings.Contains(s, sec.placeholder) {
				used[sec.name] = true
			}
		}
	}
	for k, vs := range r.Header {
		for i, v := range vs {
			note(v)
			if basic, ok := substituteBasic(v, raw, note); ok {
				vs[i] = basic
				continue
			}
			vs[i] = replaceString(v, raw)
		}
		r.Header[k] = vs
	}
	note(r.URL.RawQuery)
	note(r.URL.Path)
	r.URL.RawQuery = replaceString(r.URL.RawQuery, substitutions(secrets, url.QueryEscape))
	r.URL.Path = replaceString(r.URL.Path, raw)
	r.URL.RawPath = replaceString(r.URL.RawPath, substitutions(secrets, url.PathEscape))
	return used
}

// substituteBody sets up the substitution of placeholders in the request
// body. A body with a known length of at most Limits.MaxBodyBuffer bytes is
// read and substituted in memory first (keeping a Content-Length), charged
// against the box's Limits.MaxBuffered; when that budget is spent the
// request is refused with 413. Longer or unknown lengths are substituted
// while streaming and sent chunked. A compressed body (Content-Encoding
// other than identity) is passed through untouched: placeholders inside it
// are not substituted. Reads stall out after Limits.BodyStallTimeout.
// release returns the buffer budget; a non-zero status refuses the request.
func (b *box) substituteBody(w http.ResponseWriter, r *http.Request, secrets []*boxSecret) (rr *replacingReader, counted *countingBody, release func(), status int, why string) {
	release = func() {}
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil, nil, release, 0, ""
	}
	counted = &countingBody{ReadCloser: newStallBody(w, r.Body, b.limits.BodyStallTimeout)}
	if ce := strings.TrimSpace(strings.Join(r.Header.Values("Content-Encoding"), "")); ce != "" && !strings.EqualFold(ce, "identity") {
		r.Body = counted
		return nil, counted, release, 0, ""
	}
	rr = newReplacingReader(counted, substitutions(secrets, bodyEscaper(r.Header.Get("Content-Type"))))
	if r.ContentLength < 0 || r.ContentLength > b.limits.MaxBodyBuffer {
		r.Body = rr
		r.ContentLength = -1
		r.Header.Del("Content-Length")
		return rr, counted, release, 0, ""
	}
	n := r.ContentLength
	if !b.buffered.reserve(n) {
		return rr, counted, release, http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"a request body of %d bytes to a host bound to secrets is held in memory while placeholders are substituted, "+
				"and this box already holds %d of its %d bytes for that (terminal.container_memory sets the budget); "+
				"retry when other uploads finish, or send the body chunked", n, b.buffered.used(), b.limits.MaxBuffered)
	}
	release = func() { b.buffered.release(n) }
	body, err := readChunked(rr, n)
	if err != nil {
		return rr, counted, release, http.StatusRequestTimeout, "reading the request body: " + err.Error()
	}
	r.Body = body
	r.ContentLength = body.size
	return rr, counted, release, 0, ""
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

// base64Core returns the standard-alphabet base64 characters that encode
// only bits of v when v starts shift bytes (0-2) after a 3-byte boundary
// of a larger encoded string: they appear in that string whatever bytes
// surround v.
func base64Core(v []byte, shift int) string {
	enc := base64.RawStdEncoding.EncodeToString(append(make([]byte, shift), v...))
	first := (8*shift + 5) / 6       // first character with no bit before v
	last := 8 * (shift + len(v)) / 6 // characters wholly inside v end here
	if last <= first {
		return ""
	}
	return enc[first:last]
}

func toURLAlphabet(s string) string {
	return strings.NewReplacer("+", "-", "/", "_").Replace(s)
}

// substituteBasic handles an HTTP Basic credential (RFC 7617): when v is
// "Basic base64(user:password)" and the decoded credential holds a
// placeholder, it returns the credential with the placeholders replaced
// and encoded again, which is how curl -u and git send tokens. note sees
// the decoded credential.
func substituteBasic(v string, reps []replacement, note func(string)) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return v, false
	}
	plain, ok := decodeBase64(strings.TrimSpace(cred))
	if !ok {
		return v, false
	}
	replaced := replaceString(plain, reps)
	if replaced == plain {
		return v, false
	}
	note(plain)
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(replaced)), true
}

// decodeBase64 decodes standard base64 with or without padding.
func decodeBase64(s string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return "", false
		}
	}
	return string(b), true
}
