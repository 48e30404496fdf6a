package sandboxserver

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A client that sends the headers of a request and then too little of its
// body loses the connection; before, it held it (and a goroutine) forever
// on both listeners, even without a key.
func TestSlowBodyIsCutOff(t *testing.T) {
	srv, err := New(Config{Boxes: newFakeBoxes(), APIKeys: []string{testKey}, BodyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close() })
	for _, c := range []struct{ url, head string }{
		{api.URL, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: " + testKey + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"},
		{api.URL, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"},
		{envd.URL, "POST /files?path=a HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\n{"},
		// A refused request (no Content-Type) does not wait for its body.
		{api.URL, "POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(c.head))
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = http.ReadResponse(bufio.NewReader(conn), nil)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%q: the connection is still open 20 s after a body that stopped", c.head)
		}
		conn.Close()
	}
}
