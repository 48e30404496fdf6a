package sandboxserver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Refusals of a request whose body was announced but not sent (a wrong
// API key; a wrong envd token) answer at once with Connection: close
// instead of net/http first reading the body.
func TestAuthRefusalsDoNotWaitForTheBody(t *testing.T) {
	_, _, api, envd := newTestServer(t)
	for _, tc := range []struct {
		name, url, req string
		want           int
	}{
		{"API without key", api.URL, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", http.StatusUnauthorized},
		{"envd without token", envd.URL, "POST /files?path=x HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: nosuch\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\nx", http.StatusBadGateway},
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(tc.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, tc.req)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want || !res.Close {
			t.Fatalf("%s: status %d, close %v; want %d and Connection: close", tc.name, res.StatusCode, res.Close, tc.want)
		}
	}
}
