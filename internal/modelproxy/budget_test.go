package modelproxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// Stalled chunked bodies each reserve MaxBody of the proxy's in-flight
// budget (4 × MaxBody); once they fill it, another POST answers 503 with
// Retry-After at once instead of holding one more body in memory.
func TestProxyBoundsBodiesInFlight(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(up.Close)
	p, base := start(t, openAIEndpoint(up.URL))
	addr := strings.TrimPrefix(base, "http://")
	for range DefaultMaxBodyBytesInFlight {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", testToken)
	}
	// The stalled bodies reserve as their handlers run. Polling with
	// POSTs until one was refused raced them: a POST that held 2 bytes
	// when the fourth stalled body reserved made that body the one
	// refused, and the three left never filled the budget (CI waited 570 s).
	waitfor.Until(t, "the stalled bodies to hold the whole budget", func() bool {
		return p.bodies.Held() == DefaultMaxBodyBytesInFlight*p.cfg.MaxBody
	})
	refused, _ := post(t, base+"/v1/chat/completions", testToken, `{}`)
	if refused.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d with the budget full, want 503", refused.StatusCode)
	}
	if refused.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}

// A request without the token is answered 401 and closed without
// waiting for a body the client has announced but not sent.
func TestProxyUnauthorizedDoesNotWaitForBody(t *testing.T) {
	_, base := start(t, openAIEndpoint("http://127.0.0.1:1"))
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !res.Close {
		t.Fatalf("status %d, close %v; want 401 and Connection: close", res.StatusCode, res.Close)
	}
}
