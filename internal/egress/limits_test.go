package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// limitedRig is a box with a secret on api.secret.test (echo upstream)
// and the given limits.
func limitedRig(t *testing.T, lim Limits) (*rig, int) {
	t.Helper()
	r := newRig(t, rigOptions{
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
		limits:  lim,
	})
	port := r.upCA.upstream(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n, _ := io.Copy(io.Discard, req.Body)
		fmt.Fprintf(w, "got %d bytes", n)
	}), "api.secret.test")
	return r, port
}

// interceptedConn opens CONNECT + TLS (trusting the box CA) to the secret
// host and returns the TLS connection.
func (r *rig) interceptedConn(t *testing.T, port int) *tls.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT api.secret.test:%d HTTP/1.1\r\nHost: api.secret.test:%d\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "api.secret.test", RootCAs: r.boxRoots(t)})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc
}

// closedWithin reports whether the peer closes c (or resets it) before
// wait passes; data read is returned.
func closedWithin(c net.Conn, wait time.Duration) (bool, string) {
	c.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, string(b)
	}
	return true, string(b)
}

func TestStalledUploadsToASecretHostAreBoundedPerBox(t *testing.T) {
	// Each stalled upload announces a body the gate would buffer; the
	// box's buffer budget holds two of them, so whichever of three the
	// gate takes last gets 413 at once while the others wait.
	r, port := limitedRig(t, Limits{MaxBuffered: 1 << 20, MaxBodyBuffer: 512 << 10, BodyStallTimeout: time.Hour})
	const announced = 500 << 10
	type answer struct {
		resp *http.Response
		err  error
	}
	answers := make(chan answer, 3)
	for range 3 {
		c := r.interceptedConn(t, port)
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: api.secret.test:%d\r\nContent-Length: %d\r\n\r\n", port, announced)
		go func() {
			c.Write(make([]byte, announced-1)) // all but one byte, then stall
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			answers <- answer{resp, err}
		}()
	}
	a := <-answers
	if a.err != nil {
		t.Fatalf("no upload refused while three stall: %v", a.err)
	}
	body := readAllString(a.resp.Body)
	if a.resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "terminal.container_memory") {
		t.Fatalf("%d %q, want 413 naming the budget", a.resp.StatusCode, body)
	}
}

func TestStalledBodyIsCutOff(t *testing.T) {
	r, port := limitedRig(t, Limits{BodyStallTimeout: 200 * time.Millisecond})
	c := r.interceptedConn(t, port)
	fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: api.secret.test:%d\r\nContent-Length: 100\r\n\r\nonly half", port)
	if closed, got := closedWithin(c, 20*time.Second); !closed || !strings.Contains(got, "408") {
		t.Fatalf("a stalled body kept its connection (closed=%v): %q", closed, got)
	}
}

func TestTLSHandshakeWithTheBoxHasADeadline(t *testing.T) {
	r, port := limitedRig(t, Limits{HandshakeTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT api.secret.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port)
	// Never send a ClientHello.
	if closed, got := closedWithin(c, 20*time.Second); !closed || !strings.Contains(got, "200") {
		t.Fatalf("a stalled TLS handshake kept its connection (closed=%v): %q", closed, got)
	}
	// The SOCKS5 negotiation has the same deadline.
	s, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write([]byte{5, 1, 0})
	if closed, _ := closedWithin(s, 20*time.Second); !closed {
		t.Fatal("a stalled SOCKS5 negotiation kept its connection")
	}
}

func TestConnectionsPerBoxAreCapped(t *testing.T) {
	r, _ := limitedRig(t, Limits{MaxConns: 3, HandshakeTimeout: time.Hour})
	conns := make([]net.Conn, 4)
	for i := range conns {
		c, err := net.Dial("tcp", r.proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte{5}) // a SOCKS5 greeting cut short: the gate waits
		conns[i] = c
	}
	// Exactly one of the four (whichever the gate saw last) is closed.
	closed := make(chan bool, len(conns))
	for _, c := range conns {
		go func() { ok, _ := closedWithin(c, 20*time.Second); closed <- ok }()
	}
	if !<-closed {
		t.Fatal("a connection past MaxConns was served")
	}
	// The others are still open: cut their reads short (again, until each
	// reader has set its own deadline) and expect timeouts.
	for range len(conns) - 1 {
		var ok bool
	wait:
		for {
			for _, c := range conns {
				c.SetReadDeadline(time.Now())
			}
			select {
			case ok = <-closed:
				break wait
			case <-time.After(10 * time.Millisecond):
			}
		}
		if ok {
			t.Fatal("connections within MaxConns were closed")
		}
	}
	r.stop()
	if _, raw := r.audit(t); !strings.Contains(raw, "connections open through the gate") {
		t.Fatalf("refused connection not logged:\n%s", raw)
	}
}

func TestLimitsFollowTheBoxMemory(t *testing.T) {
	small, big := LimitsForMemory(256), LimitsForMemory(5120)
	if small.MemoryCap() > 256<<20/3 || small.MaxConns < 32 || small.MaxBuffered < 4<<20 {
		t.Errorf("256 MiB box: %+v cap %d", small, small.MemoryCap())
	}
	if big.MaxConns <= small.MaxConns || big.MaxBuffered <= small.MaxBuffered {
		t.Errorf("limits do not grow with memory: %+v vs %+v", big, small)
	}
	if LimitsForMemory(0) != big {
		t.Error("0 MiB must mean the 5120 MiB default")
	}
}

func TestAuditLogIsTruncatedRateLimitedAndRotated(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	path := dir + "/egress.jsonl"
	l := newAuditLog(path, AuditLimits{MaxFileSize: 16 << 10, Keep: 2}, func() time.Time { return now })
	long := "/" + strings.Repeat("a", 340<<10)
	for i := range 100 {
		l.write(AuditRecord{Box: "t", Proto: "http", Host: "denied.test", Port: 80, Path: long + fmt.Sprint(i%3), Decision: "deny", Reason: "not allowed"})
	}
	recs, _ := ReadAudit(path, 1000)
	if len(recs) == 0 || len(recs[0].Path) > 300 || !strings.Contains(recs[0].Path, "bytes]") {
		t.Fatalf("long path not truncated: %d records, first path %d bytes", len(recs), len(recs[0].Path))
	}
	// Truncation makes the three paths identical: one key, Burst lines.
	if len(recs) != 5 {
		t.Fatalf("identical lines not rate-limited: %d written", len(recs))
	}
	now = now.Add(2 * time.Minute)
	l.write(AuditRecord{Box: "t", Proto: "http", Host: "denied.test", Port: 80, Path: long + "0", Decision: "deny", Reason: "not allowed"})
	recs, _ = ReadAudit(path, 1000)
	if last := recs[len(recs)-1]; last.Suppressed != 95 {
		t.Fatalf("suppressed count %d, want 95", last.Suppressed)
	}
	for i := range 2000 { // distinct lines: rotation bounds the total
		l.write(AuditRecord{Box: "t", Proto: "http", Host: fmt.Sprintf("h%d.test", i), Decision: "deny"})
	}
	var total int64
	for _, suffix := range []string{"", ".1", ".2", ".3"} {
		if st, err := os.Stat(path + suffix); err == nil {
			total += st.Size()
		} else if suffix != ".3" {
			t.Fatalf("rotated file %s missing: %v", suffix, err)
		}
	}
	if _, err := os.Stat(path + ".3"); err == nil || total > 3*16<<10 {
		t.Fatalf("audit files take %d bytes, want at most %d (Keep=2)", total, 3*16<<10)
	}
}

func TestReadAuditSkipsOversizedLinesAndSaysSo(t *testing.T) {
	path := t.TempDir() + "/egress.jsonl"
	content := `{"box":"a","decision":"deny","host":"one.test"}` + "\n" +
		`{"box":"b","host":"` + strings.Repeat("x", 2<<20) + `"}` + "\n" +
		"not json\n" +
		`{"box":"c","decision":"allow","host":"two.test"}` + "\n"
	os.WriteFile(path, []byte(content), 0o600)
	tail, err := ReadAuditTail(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(tail.Records) != 2 || tail.Records[1].Host != "two.test" || tail.Oversized != 1 || tail.Unparsed != 1 {
		t.Fatalf("%+v", tail)
	}
}
