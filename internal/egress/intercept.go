package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
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

	redact := b.redact
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
			redactHeader(resp.Header, redact)
			resp.Body = newReplacingReader(resp.Body, redact)
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
			return nil
		},
	}
	cw := &countingWriter{ResponseWriter: w}
	rw := &redactingWriter{ResponseWriter: cw, reps: redact}
	rp.ServeHTTP(rw, r.WithContext(withPinned(r.Context(), d)))
	// Trailers: the reverse proxy copied them into the header map after
	// the body; the server sends them when this handler returns.
	redactHeader(w.Header(), redact)
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

// minEncodedSecret is the shortest secret value whose base64 and hex
// encodings are redacted too (shorter ones would redact unrelated text).
const minEncodedSecret = 6

// minBase64Core is the shortest base64 run that is redacted when a secret
// lies inside a larger base64 string (see base64Core).
const minBase64Core = 8

// redactions maps every secret value of the box back to its placeholder:
// raw and in its common encodings (percent, path, JSON), and, for values of
// at least minEncodedSecret bytes, base64 (standard and URL alphabets,
// padded and not; RFC 4648 §4, §5) and hex (lower and upper case), each to
// the same encoding of the placeholder. A secret inside a larger base64
// string (e.g. an echoed "Basic base64(user:secret)") is caught by the
// run of base64 characters that encode only the secret, at each of the
// three byte alignments; that run is replaced by the placeholder's run at
// the same alignment.
func redactions(secrets []*boxSecret) []replacement {
	var reps []replacement
	for _, s := range secrets {
		seen := map[string]bool{}
		add := func(old, new string) {
			if old != "" && !seen[old] {
				seen[old] = true
				reps = append(reps, replacement{old: old, new: new})
			}
		}
		for _, v := range []string{s.value, url.QueryEscape(s.value), url.PathEscape(s.value), jsonEscape(s.value)} {
			add(v, s.placeholder)
		}
		if len(s.value) < minEncodedSecret {
			continue
		}
		value, ph := []byte(s.value), []byte(s.placeholder)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			add(enc.EncodeToString(value), enc.EncodeToString(ph))
		}
		add(hex.EncodeToString(value), hex.EncodeToString(ph))
		add(strings.ToUpper(hex.EncodeToString(value)), strings.ToUpper(hex.EncodeToString(ph)))
		for shift := range 3 {
			core, phCore := base64Core(value, shift), base64Core(ph, shift)
			if len(core) < minBase64Core {
				continue
			}
			add(core, phCore)
			add(toURLAlphabet(core), toURLAlphabet(phCore))
		}
	}
	return reps
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

// redactHeader redacts secret values from every name and value of h; a
// Basic credential is decoded, redacted and encoded again. Names (keys,
// and the names listed in a Trailer header) are matched without regard to
// case, since reading a response canonicalises them ("x-sk-abc" arrives as
// "X-Sk-Abc").
func redactHeader(h http.Header, reps []replacement) {
	lowerReps := make([]replacement, len(reps))
	for i, r := range reps {
		lowerReps[i] = replacement{old: strings.ToLower(r.old), new: strings.ToLower(r.new)}
	}
	redactName := func(name string) string {
		prefix, rest := "", name
		if after, ok := strings.CutPrefix(name, http.TrailerPrefix); ok {
			prefix, rest = http.TrailerPrefix, after
		}
		lower := strings.ToLower(rest)
		if nk := replaceString(lower, lowerReps); nk != lower {
			return prefix + http.CanonicalHeaderKey(nk)
		}
		return name
	}
	renamed := map[string]string{}
	for k, vs := range h {
		for i, v := range vs {
			if basic, ok := substituteBasic(v, reps, func(string) {}); ok {
				v = basic
			}
			if k == "Trailer" {
				names := strings.Split(v, ",")
				for j, n := range names {
					names[j] = redactName(strings.TrimSpace(n))
				}
				v = strings.Join(names, ", ")
			}
			vs[i] = replaceString(v, reps)
		}
		if nk := redactName(k); nk != k {
			renamed[k] = nk
		}
	}
	for k, nk := range renamed {
		h[nk] = append(h[nk], h[k]...)
		delete(h, k)
	}
}

// redactingWriter redacts secret values from every header block the
// reverse proxy writes through it, including 1xx informational responses
// (103 Early Hints are relayed, redacted, rather than dropped). Trailers
// are set in the header map after the body; the caller redacts them with
// redactHeader before its handler returns.
type redactingWriter struct {
	http.ResponseWriter
	reps  []replacement
	wrote bool // the final (non-1xx) header was written
}

func (w *redactingWriter) WriteHeader(code int) {
	redactHeader(w.Header(), w.reps)
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *redactingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes, writing a redacted header first if none was written.
func (w *redactingWriter) FlushError() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (w *redactingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
