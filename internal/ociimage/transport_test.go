package ociimage

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

func TestPlainHTTPOnlyForLoopbackAndListedRegistries(t *testing.T) {
	tr := newTransport(time.Minute, []string{"registry.lan:5000"})
	for url, allowed := range map[string]bool{
		"http://10.1.2.3:5000/v2/":     false,
		"http://myhost.local:5000/v2/": false,
		"http://registry.lan:5000/v2/": true,
		"http://127.0.0.1:1/v2/":       true,
		"http://[::1]:1/v2/":           true,
		"http://localhost:1/v2/":       true,
	} {
		req, _ := http.NewRequest("GET", url, nil)
		g := tr.(*plainHTTPGuard)
		g.next = roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		_, err := tr.RoundTrip(req)
		if (err == nil) != allowed {
			t.Errorf("%s: err = %v, want allowed=%v", url, err, allowed)
		}
		if err != nil && !strings.Contains(err.Error(), "terminal.box_insecure_registries") {
			t.Errorf("%s: error does not name the setting: %v", url, err)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestStalledRegistryFailsThePull(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // never answers while the test runs
	}))
	defer srv.Close()
	defer close(release)
	s := Open(t.TempDir(), Options{StallTimeout: 100 * time.Millisecond})
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err := s.Pull(waitfor.Context(t), host+"/hermes/stalled:v1")
	if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Fatalf("pull from a stalled registry: %v", err)
	}
}
