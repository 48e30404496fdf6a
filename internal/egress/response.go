package egress

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
)

// reverseProxy is the one response pipeline of every request the gate
// fetches itself (absolute-URI proxy requests and requests inside an
// intercepted connection, whichever way it came in: CONNECT or SOCKS5). It
// sends the request to out, with Host set to the canonical authority of
// the decision (a trailing dot or odd case is not forwarded). Toward a
// host bound to secrets (d.secrets) it also:
//   - strips Range and If-Range, so a stored secret cannot be read back in
//     slices smaller than the fragments the redactor catches;
//   - asks for gzip or deflate only and decodes every encoding of the
//     response itself (secretResponse), so redaction sees plain bytes;
//   - redacts every header block (1xx included), the body and the
//     trailers through the box's redactor.
//
// Expect is dropped upstream: the gate's own server answers the box's
// 100-continue, and a 100 from upstream is not relayed again.
func (b *box) reverseProxy(d decision, rec *AuditRecord, out *url.URL) *httputil.ReverseProxy {
	secret := len(d.secrets) > 0
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = out
			pr.Out.Host = out.Host
			pr.Out.RequestURI = ""
			pr.Out.Header.Del("Expect")
			if secret {
				pr.Out.Header.Del("Range")
				pr.Out.Header.Del("If-Range")
				// Set here, the transport does not decode by itself: every
				// layer is decoded in secretResponse.
				pr.Out.Header.Set("Accept-Encoding", "gzip, deflate")
			}
		},
		Transport:    b.transport,
		ErrorLog:     log.New(io.Discard, "", 0),
		ErrorHandler: b.upstreamError(rec),
		ModifyResponse: func(resp *http.Response) error {
			rec.Status = resp.StatusCode
			if secret {
				return b.secretResponse(resp)
			}
			return nil
		},
	}
}

// serveProxied serves r through reverseProxy, with a writer that redacts
// header blocks when d is a secret host and drops relayed 100 Continue.
func (b *box) serveProxied(w http.ResponseWriter, r *http.Request, d decision, rec *AuditRecord, out *url.URL) {
	rw := &redactingWriter{ResponseWriter: w, reps: b.redactorFor(d)}
	b.reverseProxy(d, rec, out).ServeHTTP(rw, r.WithContext(withPinned(r.Context(), d)))
}

// authority is host[:port] for a URL or Host header, the port left out
// when it is the scheme's default.
func authority(host string, port, defPort int) string {
	if port == defPort {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// secretResponse decodes every content coding of a response from a host
// bound to secrets (all Content-Encoding header lines, applied in order;
// gzip, x-gzip, deflate and identity) and redacts the body. A coding it
// cannot decode is refused (the box gets a 502), never passed through.
func (b *box) secretResponse(resp *http.Response) error {
	var codings []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			switch c {
			case "", "identity":
			case "gzip", "x-gzip", "deflate":
				codings = append(codings, c)
			default:
				return fmt.Errorf("response Content-Encoding %q cannot be inspected to redact secrets", c)
			}
		}
	}
	body := io.ReadCloser(resp.Body)
	for i := len(codings) - 1; i >= 0; i-- {
		body = &decodingBody{coding: codings[i], src: body}
	}
	redactHeader(resp.Header, b.redactor)
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Body = newRedactingReader(body, b.redactor)
	return nil
}

// decodingBody decodes one content coding, set up on the first read (so a
// response without a body never blocks on it).
type decodingBody struct {
	coding string
	src    io.ReadCloser
	dec    io.Reader
	err    error
}

func (d *decodingBody) Read(p []byte) (int, error) {
	if d.dec == nil && d.err == nil {
		switch d.coding {
		case "gzip", "x-gzip":
			d.dec, d.err = gzip.NewReader(d.src)
		case "deflate": // zlib (RFC 1950) as specified, raw deflate as sent by some servers
			br := bufio.NewReader(d.src)
			if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
				d.dec, d.err = zlib.NewReader(br)
			} else {
				d.dec = flate.NewReader(br)
			}
		}
		if d.err != nil {
			d.err = fmt.Errorf("decoding the %s response body to redact secrets: %w", d.coding, d.err)
		}
	}
	if d.err != nil {
		return 0, d.err
	}
	return d.dec.Read(p)
}

func (d *decodingBody) Close() error { return d.src.Close() }

// redactHeader redacts secret values from every name and value of h; a
// Basic credential is decoded, redacted and encoded again. Names (keys,
// and the names listed in a Trailer header) are matched without regard to
// case; a renamed key is canonicalised again.
func redactHeader(h http.Header, r *redactor) {
	if r == nil {
		return
	}
	redactName := func(name string) string {
		prefix, rest := "", name
		if after, ok := strings.CutPrefix(name, http.TrailerPrefix); ok {
			prefix, rest = http.TrailerPrefix, after
		}
		if nk := r.String(rest); nk != rest {
			return prefix + http.CanonicalHeaderKey(nk)
		}
		return name
	}
	renamed := map[string]string{}
	for k, vs := range h {
		for i, v := range vs {
			if basic, ok := redactBasic(v, r); ok {
				v = basic
			}
			if k == "Trailer" {
				names := strings.Split(v, ",")
				for j, n := range names {
					names[j] = redactName(strings.TrimSpace(n))
				}
				v = strings.Join(names, ", ")
			}
			vs[i] = r.String(v)
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

// redactBasic redacts inside an HTTP Basic credential (RFC 7617).
func redactBasic(v string, r *redactor) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return v, false
	}
	plain, ok := decodeBase64(strings.TrimSpace(cred))
	if !ok {
		return v, false
	}
	red := r.String(plain)
	if red == plain {
		return v, false
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(red)), true
}

// redactingWriter redacts secret values (when reps is set) from every
// header block the reverse proxy writes through it, including 1xx
// informational responses (103 Early Hints are relayed, redacted, rather
// than dropped). A 100 Continue from upstream is dropped: the gate's
// server already answered the box's Expect. Trailers are set in the header
// map after the body; the caller redacts them with redactHeader before its
// handler returns.
type redactingWriter struct {
	http.ResponseWriter
	reps  *redactor
	wrote bool // the final (non-1xx) header was written
}

func (w *redactingWriter) WriteHeader(code int) {
	if code == http.StatusContinue {
		return
	}
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
