package httpguard

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// ListeningIn reports whether a TCP socket listens on port in a
// /proc/net/tcp-format table (tcp or tcp6).
func listeningIn(t *testing.T, table string, port int) bool {
	t.Helper()
	f, err := os.Open(table)
	if err != nil {
		t.Skipf("%s: %v", table, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	want := fmt.Sprintf(":%04X", port)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st ...; st 0A is LISTEN.
		if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "0A" {
			return true
		}
	}
	return false
}

// 0.0.0.0 binds IPv4: the port shows in /proc/net/tcp, where BoxLite's
// examples poll for it (net.Listen("tcp", "0.0.0.0:…") showed only in
// /proc/net/tcp6).
func TestBindIPv4WildcardIsIPv4(t *testing.T) {
	ln, err := Bind("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if !listeningIn(t, "/proc/net/tcp", port) {
		t.Errorf("0.0.0.0:%d is not in /proc/net/tcp", port)
	}
	if _, err := os.Stat("/proc/net/tcp6"); err == nil && listeningIn(t, "/proc/net/tcp6", port) {
		t.Errorf("0.0.0.0:%d listens in /proc/net/tcp6 (dual-stack)", port)
	}
}

func TestNetwork(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:8642": "tcp4", "127.0.0.1:0": "tcp4", "[::]:8642": "tcp", ":8642": "tcp",
		"[::1]:1": "tcp", "localhost:3000": "tcp", "[::ffff:0.0.0.0]:1": "tcp", "nonsense": "tcp",
	} {
		if got := Network(addr); got != want {
			t.Errorf("Network(%q) = %s, want %s", addr, got, want)
		}
	}
}

// "::" stays dual-stack: it listens in /proc/net/tcp6 and answers IPv4.
func TestBindIPv6WildcardIsDualStack(t *testing.T) {
	ln, err := Bind("[::]:0")
	if err != nil {
		t.Skipf("no IPv6 here: %v", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if !listeningIn(t, "/proc/net/tcp6", port) {
		t.Errorf("[::]:%d is not in /proc/net/tcp6", port)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("IPv4 client of [::]: %v", err)
	}
	c.Close()
}
