package sandboxserver_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
)

// needBoxes skips unless hermes sandbox serve can run here.
func needBoxes(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("hermes sandbox serve needs root (boxes with persistent layers, the template tmpfs)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("boxes cannot run here: %v", err)
	}
}

// A keyless hermes sandbox serve (issue 31) refuses a DNS-rebinding page
// and a cross-origin text/plain POST on both listeners and creates
// nothing; one client's connections past --max-connections-per-client are
// closed at once while another address is answered, and the server's
// descriptors stay bounded.
func TestKeylessServeRefusesWebPagesAndFloods(t *testing.T) {
	needBoxes(t)
	const perClient = 8
	s, proc := serveWithKey(t, buildHermes(t), "", "--max-connections-per-client", fmt.Sprint(perClient))
	status := func(method, url, host, origin, ctype, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	create := `{"templateID":"base","timeout":86400}`
	for _, c := range []struct{ name, method, url, host, origin, ctype, body string }{
		{"rebound create", "POST", s.apiURL + "/v2/sandboxes", "evil.example:3000", "http://evil.example:3000", "application/json", create},
		{"rebound list", "GET", s.apiURL + "/v2/sandboxes", "evil.example:3000", "", "", ""},
		{"cross-origin text/plain create", "POST", s.apiURL + "/sandboxes", "", "https://evil.example", "text/plain", create},
		{"rebound envd", "POST", s.envdURL + "/process.Process/List", "evil.example:49983", "", "application/json", "{}"},
		{"cross-origin envd", "POST", s.envdURL + "/files?path=x", "", "https://evil.example", "multipart/form-data; boundary=b", "--b--\r\n"},
	} {
		if got := status(c.method, c.url, c.host, c.origin, c.ctype, c.body); got != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", c.name, got)
		}
	}
	if out := s.boxesLeft(t); strings.Contains(out, "sbx-") {
		t.Errorf("a refused request made a sandbox:\n%s", out)
	}

	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", proc.Pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	base := fds()
	// kept opens a connection from ip to addr and has /health answered on
	// it; the connection stays open (idle, kept alive) unless closeAfter.
	kept := func(ip, addr string, closeAfter bool) bool {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if closeAfter {
			defer c.Close()
		} else {
			t.Cleanup(func() { c.Close() })
		}
		conn := "keep-alive"
		if closeAfter {
			conn = "close"
		}
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: %s\r\n\r\n", conn)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode < 300
	}
	api, envd := strings.TrimPrefix(s.apiURL, "http://"), strings.TrimPrefix(s.envdURL, "http://")
	// The limit is per client across both listeners. The flood comes from
	// 127.0.0.3 (127.0.0.1 holds the test's own kept-alive connections).
	for i := range perClient {
		if !kept("127.0.0.3", []string{api, envd}[i%2], false) {
			t.Fatalf("connection %d within the limit was refused", i+1)
		}
	}
	for i := range 200 {
		if kept("127.0.0.3", []string{api, envd}[i%2], false) {
			t.Fatalf("connection %d past the per-client limit of %d was answered", perClient+i+1, perClient)
		}
		if i%50 == 0 && (!kept("127.0.0.2", api, true) || !kept("127.0.0.2", envd, true)) {
			t.Fatal("another client's /health was not answered during the flood")
		}
	}
	if got := fds(); got > base+2*perClient+8 {
		t.Errorf("the server holds %d descriptors after a flood (%d before)", got, base)
	}
}
