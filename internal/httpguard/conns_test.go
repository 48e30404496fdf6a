package httpguard

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/testio"
)

// floodServerEnv makes the test binary the server of TestFloodFromOneClient
// (its value is the per-client limit).
const floodServerEnv = "HTTPGUARD_FLOOD_SERVER"

func TestMain(m *testing.M) {
	if v := os.Getenv(floodServerEnv); v != "" {
		serveFlood(v)
		return
	}
	os.Exit(m.Run())
}

const floodKey = "flood-test-key"

// serveFlood serves /health and a keyed /private behind the guard on a
// loopback port, prints its address and serves until stdin closes.
func serveFlood(perClient string) {
	n, _ := strconv.Atoi(perClient)
	conns := NewConns(Limits{MaxConnsPerClient: n}, slog.New(slog.NewTextHandler(os.Stderr, nil)), nil)
	ln, err := conns.Listen("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /private", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+floodKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "private")
	})
	srv := NewServer(Policy{}.Handler(mux))
	// Idle connections stay until the limit closes them: the test sees
	// the limit at work, not the header timeout.
	srv.ReadHeaderTimeout = time.Hour
	go srv.Serve(ln)
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// clientFrom is an HTTP client whose connections come from ip (any
// 127.0.0.0/8 address is this machine's on Linux) and are not kept.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// A flood of idle connections from one address (issue 31: ~20,000 from one
// client ran the server out of descriptors) holds at most the per-client
// limit of the server's descriptors, and /health and keyed requests from
// another address are answered throughout.
func TestFloodFromOneClient(t *testing.T) {
	const perClient, flood = 50, 2000
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodServerEnv+"="+strconv.Itoa(perClient))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderrPipe, _ := cmd.StderrPipe()
	var stderr testio.Buffer
	stderrDone := make(chan struct{})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { io.Copy(&stderr, stderrPipe); close(stderrDone) }()
	t.Cleanup(func() { stdin.Close(); <-stderrDone; cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the server process did not start: %v\n%s", err, stderr.String())
	}
	addr := strings.TrimSpace(line)
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	other := clientFrom("127.0.0.2")
	answered := func(when string) {
		t.Helper()
		for path, want := range map[string]string{"/health": "ok", "/private": "private"} {
			req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
			req.Header.Set("Authorization", "Bearer "+floodKey)
			resp, err := other.Do(req)
			if err != nil {
				t.Fatalf("%s, GET %s from 127.0.0.2: %v", when, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != want {
				t.Fatalf("%s, GET %s from 127.0.0.2: %d %q", when, path, resp.StatusCode, body)
			}
		}
	}
	answered("before the flood")
	base := fds()
	closed := make(chan struct{}, flood)
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for i := range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		held = append(held, c)
		go func() {
			c.Read(make([]byte, 1)) // returns when the server closes it
			closed <- struct{}{}
		}()
		if i%250 == 0 {
			answered(fmt.Sprintf("after %d idle connections", i+1))
		}
	}
	for i := range flood - perClient {
		select {
		case <-closed:
		case <-time.After(time.Minute):
			t.Fatalf("only %d of the %d connections past the limit were closed by the server", i, flood-perClient)
		}
	}
	answered("after the flood")
	got := fds()
	t.Logf("server descriptors: %d before, %d with %d idle connections from one client", base, got, flood)
	if got > base+perClient+8 {
		t.Errorf("the server holds %d descriptors during a flood of %d connections (%d before, per-client limit %d)", got, flood, base, perClient)
	}
	// The server exits when its stdin closes; then its log is all in.
	stdin.Close()
	<-stderrDone
	if n := strings.Count(stderr.String(), "connection limit reached"); n != 1 {
		t.Errorf("the limit was logged %d times, want once:\n%s", n, stderr.String())
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// serveConns serves 200 to everything on a loopback listener limited by c.
func serveConns(t *testing.T, c *Conns) string {
	t.Helper()
	ln, err := c.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// keptConn opens a connection from ip and has one request answered on it,
// so that the server has accepted it; it stays open.
func keptConn(t *testing.T, ip, addr string) (net.Conn, bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, false
	}
	resp.Body.Close()
	return c, resp.StatusCode == 200
}

// Refusals are logged once per minute with their count, not once each.
func TestLimitIsLoggedOncePerMinute(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var log testio.Buffer
	c := NewConns(Limits{MaxConnsPerClient: 1}, slog.New(slog.NewTextHandler(&log, nil)), clock.Now)
	addr := serveConns(t, c)
	if _, ok := keptConn(t, "127.0.0.1", addr); !ok {
		t.Fatal("the first connection was refused")
	}
	for range 20 {
		if _, ok := keptConn(t, "127.0.0.1", addr); ok {
			t.Fatal("a second connection of one client was answered with a limit of 1")
		}
	}
	if n := strings.Count(log.String(), "connection limit reached"); n != 1 {
		t.Fatalf("20 refusals logged %d times, want once:\n%s", n, log.String())
	}
	clock.Add(LogEvery)
	keptConn(t, "127.0.0.1", addr)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "refused=20") || !strings.Contains(lines[1], "limit=per-client") {
		t.Fatalf("a minute later, want a second line counting 20 refusals:\n%s", log.String())
	}
}

// The total bound holds across clients, and a closed connection frees
// its place.
func TestTotalLimit(t *testing.T) {
	c := NewConns(Limits{MaxConns: 2}, nil, nil)
	if got := c.Limits().MaxConnsPerClient; got != 2 {
		t.Fatalf("per-client limit %d above the total of 2", got)
	}
	addr := serveConns(t, c)
	first, ok1 := keptConn(t, "127.0.0.1", addr)
	_, ok2 := keptConn(t, "127.0.0.2", addr)
	if !ok1 || !ok2 {
		t.Fatal("connections within the total were refused")
	}
	if _, ok := keptConn(t, "127.0.0.3", addr); ok {
		t.Fatal("a third connection was answered with a total of 2")
	}
	first.Close()
	// The server notices the close when its read of the next request
	// fails: try until the freed place is taken.
	for i := 0; ; i++ {
		if _, ok := keptConn(t, "127.0.0.3", addr); ok {
			break
		}
		if i == 1000 {
			t.Fatal("the place of a closed connection was not freed")
		}
	}
}

func TestDefaultLimitsAreBelowTheDescriptorLimit(t *testing.T) {
	l := NewConns(Limits{}, nil, nil).Limits()
	if l.MaxConnsPerClient != DefaultMaxConnsPerClient && l.MaxConnsPerClient != l.MaxConns {
		t.Errorf("per-client default %d", l.MaxConnsPerClient)
	}
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); strings.HasPrefix(line, "Max open files") && len(f) > 3 {
			if soft, err := strconv.Atoi(f[3]); err == nil && l.MaxConns > soft/2 {
				t.Errorf("total %d is more than half of RLIMIT_NOFILE %d", l.MaxConns, soft)
			}
		}
	}
}

// Each limit is rate-limited on its own: per-client refusals logged this
// minute do not hide the first total-limit refusal.
func TestLimitKindsAreLoggedSeparately(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var log testio.Buffer
	c := NewConns(Limits{MaxConns: 2, MaxConnsPerClient: 1}, slog.New(slog.NewTextHandler(&log, nil)), clock.Now)
	ln := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	client := netip.MustParsePrefix("127.0.0.1/32")
	for range 3 {
		c.refuse(ln, "per-client", client)
	}
	c.refuse(ln, "total", client)
	c.refuse(ln, "total", client)
	if n := strings.Count(log.String(), "limit=per-client"); n != 1 {
		t.Fatalf("per-client logged %d times, want once:\n%s", n, log.String())
	}
	if n := strings.Count(log.String(), "limit=total"); n != 1 {
		t.Fatalf("total logged %d times after per-client refusals, want once:\n%s", n, log.String())
	}
	clock.Add(LogEvery)
	c.refuse(ln, "total", client)
	if !strings.Contains(log.String(), "limit=total max=2 client=127.0.0.1/32 refused=2") {
		t.Fatalf("a minute later, want the total line counting its own 2 refusals:\n%s", log.String())
	}
}
