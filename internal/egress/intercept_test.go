package egress

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

const realKey = "sk-real-0123456789abcdef-VALUE"

// echoUpstream records what arrived and echoes it back in headers and body,
// as a misbehaving or debugging endpoint would.
type echoUpstream struct {
	got chan map[string]string
}

func (e *echoUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	seen := map[string]string{
		"auth": r.Header.Get("Authorization"), "query": r.URL.RawQuery, "body": string(body),
		"path": r.URL.Path, "host": r.Host,
	}
	e.got <- seen
	w.Header().Set("X-Echo-Auth", seen["auth"])
	json.NewEncoder(w).Encode(seen)
}

func secretRig(t *testing.T) (*rig, *echoUpstream, int, string) {
	t.Helper()
	r := newRig(t, rigOptions{
		allow:   []string{"plain.test", "127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1", "plain.test": "127.0.0.1"},
	})
	echo := &echoUpstream{got: make(chan map[string]string, 4)}
	port := r.upCA.upstream(t, echo, "api.secret.test", "plain.test")
	ph := r.session.Env["API_KEY"]
	if !regexp.MustCompile(`^hermes-secret-API_KEY-[0-9a-f]{32}$`).MatchString(ph) {
		t.Fatalf("placeholder %q", ph)
	}
	return r, echo, port, ph
}

func TestSecretPlaceholderIsReplacedAtItsHostAndRedactedFromTheEcho(t *testing.T) {
	r, echo, port, ph := secretRig(t)
	c := r.client(r.boxRoots(t))
	var issuer string
	c.Transport.(*http.Transport).TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		issuer = cs.PeerCertificates[0].Issuer.CommonName
		return nil
	}
	for _, tc := range []struct {
		name string
		body io.Reader
	}{
		{"buffered body", strings.NewReader("token=" + ph + "&x=1")},
		{"streamed body", io.MultiReader(strings.NewReader("token="+ph[:10]), strings.NewReader(ph[10:]+"&x=1"))},
	} {
		u := fmt.Sprintf("https://api.secret.test:%d/v1/%s?key=%s", port, url.PathEscape(ph), url.QueryEscape(ph))
		req, _ := http.NewRequest("POST", u, tc.body)
		req.Header.Set("Authorization", "Bearer "+ph)
		req.Header.Set("Accept-Encoding", "gzip") // must not defeat redaction
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d %q", tc.name, resp.StatusCode, readAllString(resp.Body))
		}
		got := <-echo.got
		if got["auth"] != "Bearer "+realKey || got["query"] != "key="+realKey || got["body"] != "token="+realKey+"&x=1" || got["path"] != "/v1/"+realKey {
			t.Fatalf("%s: upstream saw %v, want the real value everywhere", tc.name, got)
		}
		body := readAllString(resp.Body)
		if strings.Contains(body, realKey) || strings.Contains(resp.Header.Get("X-Echo-Auth"), realKey) {
			t.Fatalf("%s: the real value reached the box: %q %q", tc.name, resp.Header.Get("X-Echo-Auth"), body)
		}
		if resp.Header.Get("X-Echo-Auth") != "Bearer "+ph || !strings.Contains(body, ph) {
			t.Fatalf("%s: echo not redacted to the placeholder: %q %q", tc.name, resp.Header.Get("X-Echo-Auth"), body)
		}
	}
	if issuer != "hermes box egress CA" {
		t.Fatalf("secret host not intercepted: issuer %q", issuer)
	}
	c.CloseIdleConnections()
	r.stop()
	recs, raw := r.audit(t)
	if strings.Contains(raw, realKey) || strings.Contains(raw, "Bearer") {
		t.Fatalf("audit log holds the secret or a header:\n%s", raw)
	}
	rec := findRecord(t, recs, "https", "api.secret.test")
	if rec.Decision != "allow" || rec.Method != "POST" || rec.Status != 200 || len(rec.Secrets) != 1 || rec.Secrets[0] != "API_KEY" || rec.BytesOut == 0 {
		t.Fatalf("audit record %+v", rec)
	}
}

func TestPlaceholderToAnotherHostIsNotSubstituted(t *testing.T) {
	r, echo, port, ph := secretRig(t)
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://plain.test:%d/?key=%s", port, ph), nil)
	req.Header.Set("Authorization", "Bearer "+ph)
	resp, err := r.client(r.upCA.pool).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAllString(resp.Body)
	got := <-echo.got
	if got["auth"] != "Bearer "+ph || got["query"] != "key="+ph {
		t.Fatalf("non-secret host received %v, want the placeholder unchanged", got)
	}
}

func TestSecretHostRejectsHostMismatchAndWebSocket(t *testing.T) {
	r, _, port, _ := secretRig(t)
	c := r.client(r.boxRoots(t))
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d/", port), nil)
	req.Host = "plain.test"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAllString(resp.Body); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "does not match the CONNECT host") {
		t.Fatalf("host mismatch: %d %q", resp.StatusCode, body)
	}
	req, _ = http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d/ws", port), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAllString(resp.Body); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "WebSocket") {
		t.Fatalf("websocket: %d %q", resp.StatusCode, body)
	}
}

func TestSecretHostIsImplicitlyAllowedButDenyWins(t *testing.T) {
	r := newRig(t, rigOptions{
		allow: []string{"127.0.0.1/32"}, deny: []string{"blocked.secret.test"},
		secrets: []Secret{{Name: "K", Value: realKey, Hosts: []string{"*.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1", "blocked.secret.test": "127.0.0.1"},
	})
	if resp, body := r.rawConnect(t, "api.secret.test:443"); resp.StatusCode != http.StatusOK {
		t.Fatalf("secret host: %d %q", resp.StatusCode, body)
	}
	if resp, body := r.rawConnect(t, "blocked.secret.test:443"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("denied secret host: %d %q", resp.StatusCode, body)
	}
}

func TestSecretHostResponseThatCannotBeInspectedIsRefused(t *testing.T) {
	r := newRig(t, rigOptions{
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
	})
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Encoding", "br") // opaque to the redactor
		io.WriteString(w, req.Header.Get("Authorization"))
	}), "api.secret.test")
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d/", port), nil)
	req.Header.Set("Authorization", r.session.Env["API_KEY"])
	resp, err := r.client(r.boxRoots(t)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, realKey) || !strings.Contains(body, "Content-Encoding") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestEarlyHintsTrailersAndHeaderNamesAreRedacted(t *testing.T) {
	r := newRig(t, rigOptions{
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
	})
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got := req.Header.Get("Authorization") // the real value
		w.Header().Set("Link", "</style.css?k="+got+">; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Set("Trailer", "X-Announced, X-T-"+got)
		w.Header().Set("X-"+got, "named after the secret")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Announced", got)
		w.Header().Set("X-T-"+got, "trailer named after the secret")
		w.Header().Set(http.TrailerPrefix+"X-Late", got)
	}), "api.secret.test")
	ph := r.session.Env["API_KEY"]

	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprintf("%d %v", code, h))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET",
		fmt.Sprintf("https://api.secret.test:%d/", port), nil)
	req.Header.Set("Authorization", ph)
	resp, err := r.client(r.boxRoots(t)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body) // trailers arrive after the body
	seen := fmt.Sprintf("hints=%v header=%v trailer=%v body=%q", hints, resp.Header, resp.Trailer, body)
	if strings.Contains(strings.ToLower(seen), strings.ToLower(realKey)) {
		t.Fatalf("the real value reached the box: %s", seen)
	}
	if len(hints) != 1 || !strings.Contains(hints[0], "103") || !strings.Contains(hints[0], ph) {
		t.Errorf("103 Early Hints not relayed with the placeholder: %v", hints)
	}
	if resp.Trailer.Get("X-Announced") != ph || resp.Trailer.Get("X-Late") != ph || resp.Trailer.Get("X-T-"+ph) == "" {
		t.Errorf("trailers not relayed as the placeholder: %v", resp.Trailer)
	}
	if resp.Header.Get("X-"+ph) != "named after the secret" {
		t.Errorf("header named after the secret not renamed to the placeholder: %v", resp.Header)
	}
}

func TestEncodedSecretEchoesAreRedacted(t *testing.T) {
	// '?' and '>' make '/' and '+' appear in base64, so the standard and
	// URL alphabets differ.
	const value = "tok?>>>?~secret-0123456789-??>>"
	r := newRig(t, rigOptions{
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "TOKEN", Value: value, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
	})
	type echo struct {
		Enc    string // how to decode Text
		Prefix string // bytes encoded before the value
		Text   string
	}
	encodings := map[string]*base64.Encoding{
		"std": base64.StdEncoding, "rawstd": base64.RawStdEncoding, "url": base64.URLEncoding, "rawurl": base64.RawURLEncoding,
	}
	if base64.StdEncoding.EncodeToString([]byte(value)) == base64.URLEncoding.EncodeToString([]byte(value)) {
		t.Fatal("test value does not exercise both base64 alphabets")
	}
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got := []byte(req.Header.Get("X-Token"))
		var out []echo
		for name, enc := range encodings {
			for _, prefix := range []string{"", "u", "us", "user:"} { // every byte alignment
				out = append(out, echo{name, prefix, enc.EncodeToString(append([]byte(prefix), got...))})
			}
		}
		out = append(out, echo{"hex", "", hex.EncodeToString(got)}, echo{"HEX", "", strings.ToUpper(hex.EncodeToString(got))})
		w.Header().Set("X-B64", base64.StdEncoding.EncodeToString(got))
		w.Header().Set("X-Hex", hex.EncodeToString(got))
		json.NewEncoder(w).Encode(out)
	}), "api.secret.test")
	ph := r.session.Env["TOKEN"]
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://api.secret.test:%d/", port), nil)
	req.Header.Set("X-Token", ph)
	resp, err := r.client(r.boxRoots(t)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw := readAllString(resp.Body)
	var echoes []echo
	if err := json.Unmarshal([]byte(raw), &echoes); err != nil || len(echoes) != 18 {
		t.Fatalf("echo %q: %v", raw, err)
	}
	for _, e := range echoes {
		decoded := decodeLeniently(e.Enc, e.Text)
		if strings.Contains(decoded, value) {
			t.Errorf("%s encoding after %q leaks the value: %q", e.Enc, e.Prefix, e.Text)
		}
	}
	// A whole-value encoding becomes the same encoding of the placeholder.
	if got := resp.Header.Get("X-B64"); got != base64.StdEncoding.EncodeToString([]byte(ph)) {
		t.Errorf("X-B64 %q, want base64 of the placeholder", got)
	}
	if got := resp.Header.Get("X-Hex"); got != hex.EncodeToString([]byte(ph)) {
		t.Errorf("X-Hex %q, want hex of the placeholder", got)
	}
}

// decodeLeniently decodes what it can of text in the named encoding.
func decodeLeniently(enc, text string) string {
	switch enc {
	case "hex", "HEX":
		b, _ := hex.DecodeString(text)
		return string(b)
	}
	text = strings.TrimRight(text, "=")
	text = strings.NewReplacer("-", "+", "_", "/").Replace(text)
	if len(text)%4 == 1 {
		text = text[:len(text)-1]
	}
	b, _ := base64.RawStdEncoding.DecodeString(text)
	return string(b)
}

func TestBasicAuthPlaceholderIsSubstituted(t *testing.T) {
	r, _, _, ph := secretRig(t)
	// git over HTTPS: a 401 challenge first, then Basic credentials.
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Echo-Auth", req.Header.Get("Authorization"))
		fmt.Fprintf(w, "user=%s password-ok=%v", user, pass == realKey)
	}), "api.secret.test")
	c := r.client(r.boxRoots(t))
	u := fmt.Sprintf("https://api.secret.test:%d/org/repo.git/info/refs?service=git-upload-pack", port)
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if readAllString(resp.Body); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("challenge: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", u, nil)
	req.SetBasicAuth("x-access-token", ph) // what curl -u user:$API_KEY and git send
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body)
	if resp.StatusCode != http.StatusOK || body != "user=x-access-token password-ok=true" {
		t.Fatalf("upstream did not get the real value in Basic credentials: %d %q", resp.StatusCode, body)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
	if got := resp.Header.Get("X-Echo-Auth"); got != want {
		t.Errorf("echoed credentials %q, want them redacted back to %q", got, want)
	}
	c.CloseIdleConnections()
	r.stop()
	recs, raw := r.audit(t)
	if strings.Contains(raw, realKey) {
		t.Fatal("audit log holds the secret")
	}
	var used bool
	for _, rec := range recs {
		used = used || rec.Proto == "https" && rec.Status == 200 && len(rec.Secrets) == 1 && rec.Secrets[0] == "API_KEY"
	}
	if !used {
		t.Errorf("no audit record says API_KEY was used: %+v", recs)
	}
}

// Issue 23: a placeholder sent over plain HTTP to a host bound to its
// secret goes out unchanged (by design: the value never crosses a network
// in clear text), and egress.jsonl says so.
func TestPlainHTTPPlaceholderIsLoggedNotSubstituted(t *testing.T) {
	r, _, _, ph := secretRig(t)
	got := make(chan string, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got <- req.Header.Get("Authorization")
	}))
	t.Cleanup(up.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	req, _ := http.NewRequest("GET", "http://api.secret.test:"+port+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+ph)
	resp, err := r.client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if auth := <-got; auth != "Bearer "+ph || strings.Contains(auth, realKey) {
		t.Fatalf("upstream saw %q, want the placeholder unchanged", auth)
	}
	r.closeAndWait(t)
	recs, raw := r.audit(t)
	rec := findRecord(t, recs, "http", "api.secret.test")
	if !strings.Contains(rec.Reason, "placeholder not substituted: plain HTTP (API_KEY)") || strings.Contains(raw, realKey) {
		t.Fatalf("audit record %+v", rec)
	}
}
