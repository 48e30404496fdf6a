package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"

	"golang.org/x/net/proxy"
)

// storedSecretRig is a box with one secret bound to api.secret.test whose
// upstream serves the real value back, as a gist, an issue or a paste the
// box wrote earlier would.
func storedSecretRig(t *testing.T, value string, h func(w http.ResponseWriter, r *http.Request, secret string)) (*rig, int) {
	t.Helper()
	r := newRig(t, rigOptions{
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: value, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
	})
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h(w, req, value)
	}), "api.secret.test")
	return r, port
}

func serveStored(w http.ResponseWriter, _ *http.Request, secret string) {
	w.Header().Set("X-Stored", secret)
	io.WriteString(w, "stored: "+secret)
}

// leaksFragment reports whether s holds fragmentLen or more contiguous
// characters of secret, compared without regard to ASCII case.
func leaksFragment(s, secret string) bool {
	s = placeholderRE.ReplaceAllString(s, "")
	ls, lv := strings.ToLower(s), strings.ToLower(secret)
	for k := 0; k+fragmentLen <= len(lv); k++ {
		if strings.Contains(ls, lv[k:k+fragmentLen]) {
			return true
		}
	}
	return strings.Contains(ls, lv)
}

var placeholderRE = regexp.MustCompile(`hermes-secret-[A-Za-z0-9_]+-[0-9a-f]{32}`)

// bothRoots trusts the box CA and the upstream CA, as an attacker who
// accepts any certificate would.
func (r *rig) bothRoots(t *testing.T) *x509.CertPool {
	p := r.boxRoots(t)
	p.AddCert(r.upCA.cert)
	return p
}

func TestSOCKS5ToASecretHostIsInterceptedAndRedacted(t *testing.T) {
	r, port := storedSecretRig(t, realKey, serveStored)
	ph := r.session.Env["API_KEY"]
	dialer, err := proxy.SOCKS5("tcp", r.proxyAddr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	var issuer string
	c := &http.Client{Transport: &http.Transport{
		DialContext: dialer.(proxy.ContextDialer).DialContext,
		TLSClientConfig: &tls.Config{RootCAs: r.bothRoots(t), VerifyConnection: func(cs tls.ConnectionState) error {
			issuer = cs.PeerCertificates[0].Issuer.CommonName
			return nil
		}},
	}}
	resp, err := c.Get(fmt.Sprintf("https://api.secret.test:%d/gist", port))
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body)
	if leaksFragment(body+resp.Header.Get("X-Stored"), realKey) {
		t.Fatalf("the stored secret came back in clear over SOCKS5: %q %q", resp.Header.Get("X-Stored"), body)
	}
	if body != "stored: "+ph || issuer != "hermes box egress CA" {
		t.Fatalf("SOCKS5 to a secret host not intercepted: issuer %q body %q", issuer, body)
	}
	// Plain text over SOCKS5 to a secret host is refused, not tunnelled.
	conn, err := dialer.Dial("tcp", fmt.Sprintf("api.secret.test:%d", port))
	if err == nil {
		fmt.Fprintf(conn, "GET /gist HTTP/1.1\r\nHost: api.secret.test\r\n\r\n")
		got, _ := io.ReadAll(conn)
		conn.Close()
		if leaksFragment(string(got), realKey) || len(got) > 0 {
			t.Fatalf("plain text over SOCKS5 to a secret host answered: %q", got)
		}
	}
}

func TestAbsoluteHTTPSURLThroughThePlainProxyIsRedacted(t *testing.T) {
	r, port := storedSecretRig(t, realKey, serveStored)
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET https://api.secret.test:%d/gist HTTP/1.1\r\nHost: api.secret.test:%d\r\n\r\n", port, port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body)
	if leaksFragment(body+resp.Header.Get("X-Stored"), realKey) {
		t.Fatalf("absolute https:// URL returned the secret in clear: %q %q", resp.Header.Get("X-Stored"), body)
	}
	if resp.StatusCode != 200 || body != "stored: "+r.session.Env["API_KEY"] {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func gzipped(t *testing.T, s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, s)
	zw.Close()
	return buf.Bytes()
}

func TestEveryContentEncodingLineIsDecodedOrRefused(t *testing.T) {
	r, port := storedSecretRig(t, realKey, func(w http.ResponseWriter, req *http.Request, secret string) {
		switch req.URL.Path {
		case "/identity-then-gzip":
			w.Header().Add("Content-Encoding", "identity")
			w.Header().Add("Content-Encoding", "gzip")
			w.Write(gzipped(t, "stored: "+secret))
		case "/gzip-twice":
			w.Header().Add("Content-Encoding", "gzip")
			w.Header().Add("Content-Encoding", "GZIP")
			w.Write(gzipped(t, string(gzipped(t, "stored: "+secret))))
		case "/gzip-then-br":
			w.Header().Set("Content-Encoding", "gzip, br")
			w.Write([]byte("opaque " + secret))
		}
	})
	c := r.client(r.boxRoots(t))
	for _, path := range []string{"/identity-then-gzip", "/gzip-twice", "/gzip-then-br"} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d%s", port, path), nil)
		req.Header.Set("Accept-Encoding", "identity") // the box decodes nothing itself
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw := readAllString(resp.Body)
		plain := raw
		for range 2 { // what the box could decode itself
			if zr, err := gzip.NewReader(strings.NewReader(plain)); err == nil {
				b, _ := io.ReadAll(zr)
				plain = string(b)
			}
		}
		if leaksFragment(plain, realKey) {
			t.Fatalf("%s: the secret passed through encoded: %q", path, plain)
		}
		switch {
		case path == "/gzip-then-br" && resp.StatusCode != http.StatusBadGateway:
			t.Errorf("%s: an encoding that cannot be decoded must be refused, got %d %q", path, resp.StatusCode, raw)
		case path != "/gzip-then-br" && (resp.StatusCode != 200 || raw != "stored: "+r.session.Env["API_KEY"] || resp.Header.Get("Content-Encoding") != ""):
			t.Errorf("%s: %d %v %q, want the decoded, redacted body", path, resp.StatusCode, resp.Header, raw)
		}
	}
}

func TestRangeIsStrippedAndFragmentsAndCaseChangesAreRedacted(t *testing.T) {
	var ranges []string
	r, port := storedSecretRig(t, realKey, func(w http.ResponseWriter, req *http.Request, secret string) {
		ranges = append(ranges, req.Header.Get("Range")+req.Header.Get("If-Range"))
		if rg := req.Header.Get("Range"); rg != "" { // a slice of the stored secret
			var from, to int
			fmt.Sscanf(rg, "bytes=%d-%d", &from, &to)
			w.WriteHeader(http.StatusPartialContent)
			io.WriteString(w, secret[from:to+1])
			return
		}
		fmt.Fprintf(w, "upper %s lower %s pieces %s|%s|%s mixed %s",
			strings.ToUpper(secret), strings.ToLower(secret), secret[:9], secret[5:17], secret[len(secret)-8:],
			strings.ToUpper(secret[:10])+secret[10:])
	})
	c := r.client(r.boxRoots(t))
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d/gist", port), nil)
	req.Header.Set("Range", "bytes=3-12")
	req.Header.Set("If-Range", `"etag"`)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body)
	if leaksFragment(body, realKey) {
		t.Fatalf("pieces or case changes of the secret came back: %q", body)
	}
	if ranges[0] != "" || resp.StatusCode != 200 {
		t.Fatalf("Range reached the secret host (%q) or was answered %d", ranges[0], resp.StatusCode)
	}
}

func TestSecretsInOtherEncodingsAreRedacted(t *testing.T) {
	// '/' and '+' make JSON \/ escaping and percent-encoding differ from
	// the raw value.
	const value = "sk/live+Q7mZ-secret-0123456789abcdef"
	encode := map[string]func(string) string{
		"percent-lower": func(s string) string {
			var b strings.Builder
			for i := 0; i < len(s); i++ {
				fmt.Fprintf(&b, "%%%02x", s[i])
			}
			return b.String()
		},
		"json-slash": func(s string) string { return strings.ReplaceAll(s, "/", `\/`) },
		"json-u00": func(s string) string {
			var b strings.Builder
			for i := 0; i < len(s); i++ {
				fmt.Fprintf(&b, `\u%04x`, s[i])
			}
			return b.String()
		},
		"html-dec": func(s string) string {
			var b strings.Builder
			for i := 0; i < len(s); i++ {
				fmt.Fprintf(&b, "&#%d;", s[i])
			}
			return b.String()
		},
		"html-hex": func(s string) string {
			return strings.NewReplacer("+", "&#43;", "/", "&#x2F;", "s", "&#x73;").Replace(s)
		},
		"html-named": func(s string) string { return strings.NewReplacer("+", "&plus;", "/", "&sol;").Replace(s) },
		"utf16le": func(s string) string {
			var b []byte
			for _, u := range utf16.Encode([]rune(s)) {
				b = append(b, byte(u), byte(u>>8))
			}
			return string(b)
		},
		"utf16be": func(s string) string {
			var b []byte
			for _, u := range utf16.Encode([]rune(s)) {
				b = append(b, byte(u>>8), byte(u))
			}
			return string(b)
		},
		"upper": strings.ToUpper,
	}
	r, port := storedSecretRig(t, value, func(w http.ResponseWriter, req *http.Request, secret string) {
		io.WriteString(w, encode[strings.TrimPrefix(req.URL.Path, "/")](secret))
	})
	c := r.client(r.boxRoots(t))
	for name := range encode {
		resp, err := c.Get(fmt.Sprintf("https://api.secret.test:%d/%s", port, name))
		if err != nil {
			t.Fatal(err)
		}
		text := readAllString(resp.Body)
		if decoded := decodeEcho(name, text); leaksFragment(decoded, value) {
			t.Errorf("%s form leaks the secret: %q (decoded %q)", name, text, decoded)
		}
	}
}

// decodeEcho undoes the encodings of TestSecretsInOtherEncodingsAreRedacted
// as the box would.
func decodeEcho(enc, s string) string {
	switch enc {
	case "percent-lower":
		var b []byte
		for i := 0; i < len(s); i++ {
			if s[i] == '%' && i+2 < len(s) {
				if v, err := hex.DecodeString(s[i+1 : i+3]); err == nil {
					b = append(b, v[0])
					i += 2
					continue
				}
			}
			b = append(b, s[i])
		}
		return string(b)
	case "json-slash", "json-u00":
		var out string
		json.Unmarshal([]byte(`"`+s+`"`), &out)
		return out
	case "html-dec", "html-hex", "html-named":
		return htmlUnescape(s)
	case "utf16le", "utf16be":
		return strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

func TestErrorTextIsRedactedInEveryEncoding(t *testing.T) {
	r := newRig(t, rigOptions{
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
	})
	// An upstream that answers with a malformed status line carrying the
	// secret it was sent, hex-encoded, then base64-encoded.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{r.upCA.leaf(t, "api.secret.test")}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				got := []byte(req.Header.Get("Authorization"))
				form := hex.EncodeToString(got)
				if i%2 == 1 {
					form = encodeStd(got)
				}
				fmt.Fprintf(c, "HTTP/%s 200 OK\r\n\r\n", form)
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	c := r.client(r.boxRoots(t))
	c.Transport.(*http.Transport).DisableKeepAlives = true
	for range 2 {
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d/", port), nil)
		req.Header.Set("Authorization", r.session.Env["API_KEY"])
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAllString(resp.Body)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "malformed HTTP version") {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		if leaksEncoded(body, realKey) {
			t.Fatalf("502 body carries an encoded secret: %q", body)
		}
	}
	r.stop()
	_, raw := r.audit(t)
	if leaksEncoded(raw, realKey) {
		t.Fatalf("audit error field carries an encoded secret:\n%s", raw)
	}
}

func leaksEncoded(s, secret string) bool {
	return strings.Contains(s, secret) || strings.Contains(s, hex.EncodeToString([]byte(secret))) ||
		strings.Contains(s, encodeStd([]byte(secret))[:20])
}
