package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestExpectContinueYieldsOneContinue(t *testing.T) {
	r, port := limitedRig(t, Limits{})
	c := r.interceptedConn(t, port)
	fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: api.secret.test:%d\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n", port)
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("first line %q %v", line, err)
	}
	io.WriteString(c, "hello")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	rest, _ := io.ReadAll(br)
	if n := strings.Count(string(rest), "HTTP/1.1 100"); n != 0 || !strings.Contains(string(rest), "got 5 bytes") {
		t.Fatalf("%d more 100 Continue responses after the first: %q", n, rest)
	}
}

func TestTrailingDotHostIsForwardedCanonical(t *testing.T) {
	r, _, _, _ := secretRig(t)
	hosts := make(chan string, 2)
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hosts <- req.Host
	}), "api.secret.test", "plain.test")
	c := r.interceptedConn(t, port)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: API.secret.test.:%d\r\nConnection: close\r\n\r\n", port)
	io.ReadAll(c)
	if got, want := <-hosts, fmt.Sprintf("api.secret.test:%d", port); got != want {
		t.Errorf("intercepted: upstream saw Host %q, want %q", got, want)
	}
	p, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	plain := httpUpstream(t, func(req *http.Request) { hosts <- req.Host })
	fmt.Fprintf(p, "GET http://plain.test.:%d/ HTTP/1.1\r\nHost: plain.test.:%d\r\nConnection: close\r\n\r\n", plain, plain)
	io.ReadAll(p)
	if got, want := <-hosts, fmt.Sprintf("plain.test:%d", plain); got != want {
		t.Errorf("forwarded: upstream saw Host %q, want %q", got, want)
	}
}

// httpUpstream is a plain-HTTP server on 127.0.0.1 calling seen per request.
func httpUpstream(t *testing.T, seen func(*http.Request)) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { seen(req) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func TestDenyLineOfAnOriginFormRequestNamesTheHost(t *testing.T) {
	r := newRig(t, rigOptions{})
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: example.test:8080\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAllString(resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(body, "denied example.test:8080:") || strings.Contains(body, "[") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestCompressedRequestBodyIsLeftIntact(t *testing.T) {
	r, _, _, ph := secretRig(t)
	got := make(chan string, 1)
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			got <- "not gzip: " + err.Error()
			return
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			got <- "corrupt gzip: " + err.Error()
			return
		}
		got <- string(b)
	}), "api.secret.test")
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression) // the placeholder stays literal in the stream
	io.WriteString(zw, "token="+ph)
	zw.Close()
	req, _ := http.NewRequest("POST", fmt.Sprintf("https://api.secret.test:%d/", port), &buf)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := r.client(r.boxRoots(t)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAllString(resp.Body)
	if g := <-got; g != "token="+ph {
		t.Fatalf("upstream got %q, want the compressed body untouched", g)
	}
}
