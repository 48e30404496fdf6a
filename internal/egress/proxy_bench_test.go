package egress

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Run with: go test -run XXX -bench . -benchtime 2s ./internal/egress/

func benchRig(b *testing.B) (*rig, int) {
	r := newRig(b, rigOptions{
		allow:   []string{"plain.test", "127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"plain.test": "127.0.0.1", "api.secret.test": "127.0.0.1"},
	})
	payload := strings.Repeat("x", 1<<20)
	port := r.upCA.upstream(b, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/big" {
			io.WriteString(w, payload)
			return
		}
		io.WriteString(w, "ok")
	}), "plain.test", "api.secret.test")
	return r, port
}

func benchGet(b *testing.B, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkTunnelWarmRequest: small GETs over one kept-alive blind tunnel.
func BenchmarkTunnelWarmRequest(b *testing.B) {
	r, port := benchRig(b)
	c := r.client(r.upCA.pool)
	u := fmt.Sprintf("https://plain.test:%d/", port)
	benchGet(b, c, u)
	b.ResetTimer()
	for b.Loop() {
		benchGet(b, c, u)
	}
}

// BenchmarkTunnelNewConnection: CONNECT + decision + dial + TLS handshake +
// GET + audit record, per iteration.
func BenchmarkTunnelNewConnection(b *testing.B) {
	r, port := benchRig(b)
	u := fmt.Sprintf("https://plain.test:%d/", port)
	for b.Loop() {
		c := r.client(r.upCA.pool)
		c.Transport.(*http.Transport).DisableKeepAlives = true
		benchGet(b, c, u)
	}
}

// BenchmarkTunnelThroughput: 1 MiB responses over a blind tunnel.
func BenchmarkTunnelThroughput(b *testing.B) {
	r, port := benchRig(b)
	c := r.client(r.upCA.pool)
	u := fmt.Sprintf("https://plain.test:%d/big", port)
	b.SetBytes(1 << 20)
	for b.Loop() {
		benchGet(b, c, u)
	}
}

// BenchmarkInterceptedWarmRequest: small GETs to a secret host (TLS
// interception, substitution, redaction) over one kept-alive connection.
func BenchmarkInterceptedWarmRequest(b *testing.B) {
	r, port := benchRig(b)
	c := r.client(r.boxRoots(b))
	u := fmt.Sprintf("https://api.secret.test:%d/?k=%s", port, r.session.Env["API_KEY"])
	benchGet(b, c, u)
	b.ResetTimer()
	for b.Loop() {
		benchGet(b, c, u)
	}
}

// BenchmarkInterceptedThroughput: 1 MiB responses from a secret host,
// scanned for secret values.
func BenchmarkInterceptedThroughput(b *testing.B) {
	r, port := benchRig(b)
	c := r.client(r.boxRoots(b))
	u := fmt.Sprintf("https://api.secret.test:%d/big", port)
	b.SetBytes(1 << 20)
	for b.Loop() {
		benchGet(b, c, u)
	}
}

// BenchmarkDirectWarmRequest is the baseline: the same GET without the proxy.
func BenchmarkDirectWarmRequest(b *testing.B) {
	r, port := benchRig(b)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: r.client(r.upCA.pool).Transport.(*http.Transport).TLSClientConfig.Clone()}}
	c.Transport.(*http.Transport).TLSClientConfig.ServerName = "plain.test"
	u := fmt.Sprintf("https://127.0.0.1:%d/", port)
	benchGet(b, c, u)
	b.ResetTimer()
	for b.Loop() {
		benchGet(b, c, u)
	}
}
