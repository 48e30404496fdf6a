package egress

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
