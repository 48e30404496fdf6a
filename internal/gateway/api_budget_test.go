package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// Chunked bodies that stall after their headers each reserve MaxBodyBytes
// of the in-flight budget; once they fill it, another POST answers 503
// with Retry-After at once instead of waiting (~30 s) for them to end.
func TestAPIServerStalledBodiesDoNotQueueOthers(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newRuntime(t, srv, "")
	api, err := NewAPIServer(rt, APIServerConfig{Key: testKey, Port: 0, MaxBodyBytes: 1 << 10, MaxBodyBytesInFlight: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	for range 2 {
		c, err := net.Dial("tcp", api.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", testKey)
	}
	// The stalled bodies reserve as their handlers run. Polling with
	// POSTs until one was refused raced them (a POST holding its bytes
	// when the second stalled body reserved got that body refused instead).
	waitfor.Until(t, "the stalled bodies to hold the whole budget", func() bool {
		return api.bodies.Held() == 2<<10
	})
	req, _ := http.NewRequest("POST", "http://"+api.Addr()+"/v1/chat/completions", strings.NewReader(`{`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d with the budget full, want 503", res.StatusCode)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}
