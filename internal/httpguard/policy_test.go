package httpguard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPolicy(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	keyless := Policy{AllowedOrigins: []string{"https://ui.example"}, KeyHint: "--api-key"}
	keyed := Policy{Keyed: true}
	connect := Policy{BodyTypes: func(*http.Request) []string { return ConnectTypes }}
	anyType := Policy{BodyTypes: func(*http.Request) []string { return []string{} }}
	for _, c := range []struct {
		name         string
		p            Policy
		method, host string
		origin, ct   string
		body         string
		want         int
	}{
		{"curl", keyless, "POST", "127.0.0.1:3000", "", "application/json", "{}", 200},
		{"charset", keyless, "POST", "localhost:3000", "", "application/json; charset=utf-8", "{}", 200},
		{"own origin", keyless, "POST", "127.0.0.1:3000", "http://127.0.0.1:3000", JSON, "{}", 200},
		{"allowed origin", keyless, "POST", "127.0.0.1:3000", "https://ui.example", JSON, "{}", 200},
		{"GET without a type", keyless, "GET", "[::1]:3000", "", "", "", 200},
		{"cross-origin text/plain", keyless, "POST", "127.0.0.1:3000", "https://evil.example", "text/plain", "{}", 403},
		{"cross-origin GET", keyless, "GET", "127.0.0.1:3000", "https://evil.example", "", "", 403},
		{"null origin", keyless, "POST", "127.0.0.1:3000", "null", JSON, "{}", 403},
		{"other port", keyless, "POST", "127.0.0.1:3000", "http://127.0.0.1:8080", JSON, "{}", 403},
		{"rebound Host", keyless, "GET", "evil.example:3000", "", "", "", 403},
		{"rebound Host and its own Origin", keyless, "POST", "evil.example:3000", "http://evil.example:3000", JSON, "{}", 403},
		{"sub.localhost", keyless, "GET", "a.localhost:3000", "", "", "", 403},
		{"text/plain without Origin", keyless, "POST", "127.0.0.1:3000", "", "text/plain", "{}", 415},
		{"form", keyless, "POST", "127.0.0.1:3000", "", "application/x-www-form-urlencoded", "a=b", 415},
		{"no type", keyless, "POST", "127.0.0.1:3000", "", "", "{}", 415},
		{"keyed: any Host", keyed, "POST", "hermes.internal:3000", "", JSON, "{}", 200},
		{"keyed: other origin", keyed, "POST", "hermes.internal:3000", "https://evil.example", JSON, "{}", 403},
		{"keyed: text/plain", keyed, "POST", "hermes.internal:3000", "", "text/plain", "{}", 415},
		{"connect json", connect, "POST", "127.0.0.1:1", "", "application/connect+json", "{}", 200},
		{"connect proto", connect, "POST", "127.0.0.1:1", "", "application/proto", "x", 200},
		{"connect text", connect, "POST", "127.0.0.1:1", "", "text/plain", "x", 415},
		{"any type", anyType, "POST", "127.0.0.1:1", "", "multipart/form-data; boundary=x", "x", 200},
	} {
		var body *strings.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req := httptest.NewRequest(c.method, "/x", nil)
		if body != nil {
			req = httptest.NewRequest(c.method, "/x", body)
		}
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		rec := httptest.NewRecorder()
		c.p.Handler(ok).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.want)
		}
		if c.want == 403 && c.name == "rebound Host" && !strings.Contains(rec.Body.String(), "--api-key") {
			t.Errorf("the Host refusal does not name the key option: %s", rec.Body)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.:80": true, "127.0.0.1": true, "127.1.2.3:9": true, "[::1]:3000": true, "::1": true,
		"[::ffff:127.0.0.1]:1": true, "evil.example": false, "localhost.evil.example": false, "": false,
		"0.0.0.0:1": false, "[::]:1": false, "10.0.0.1": false, "127.0.0.1.nip.io": false, "[fe80::1%lo]:1": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestOwnOrigin(t *testing.T) {
	for _, c := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:3000", "127.0.0.1:3000", true},
		{"https://Hermes.Example", "hermes.example", true},
		{"http://127.0.0.1:3000", "127.0.0.1:3001", false},
		{"http://127.0.0.1", "127.0.0.1:3000", false},
		{"null", "null", false},
		{"file://", "", false},
		{"http://u:p@127.0.0.1:3000", "127.0.0.1:3000", false},
		{"http://127.0.0.1:3000/path", "127.0.0.1:3000", false},
		{"ws://127.0.0.1:3000", "127.0.0.1:3000", false},
	} {
		if got := OwnOrigin(c.origin, c.host); got != c.want {
			t.Errorf("OwnOrigin(%q, %q) = %v, want %v", c.origin, c.host, got, c.want)
		}
	}
}
