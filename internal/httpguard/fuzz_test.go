package httpguard

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// The Host and Origin parsers take any header a client sends: they never
// panic, and what they accept is what their doc comments promise.

func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"localhost", "LOCALHOST.:80", "127.0.0.1:3000", "[::1]:1", "::1", "[::ffff:127.0.0.1]:1",
		"evil.example", "127.0.0.1.nip.io", "[fe80::1%lo]:1", "[", "]:", "0x7f.1", "2130706433", "127.1", "localhost:", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		if !LoopbackHost(hostport) {
			return
		}
		host := hostport
		if h, _, err := net.SplitHostPort(hostport); err == nil {
			host = h
		}
		host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		if host == "localhost" {
			return
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Unmap().IsLoopback() {
			t.Fatalf("LoopbackHost(%q) accepted %q, which is neither localhost nor a loopback address", hostport, host)
		}
	})
}

func FuzzOwnOrigin(f *testing.F) {
	for _, s := range [][2]string{{"http://127.0.0.1:3000", "127.0.0.1:3000"}, {"null", "null"}, {"https://a.example", "A.example"},
		{"http://u@h", "h"}, {"http://h/", "h"}, {"http://h?", "h"}, {"http://h#", "h"}, {"http:h", "h"}, {"http://[::1]:1", "[::1]:1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, origin, host string) {
		if !OwnOrigin(origin, host) {
			return
		}
		scheme, rest, ok := strings.Cut(origin, "://")
		if scheme = strings.ToLower(scheme); !ok || (scheme != "http" && scheme != "https") || host == "" {
			t.Fatalf("OwnOrigin(%q, %q) accepted an origin that is not http(s)://host", origin, host)
		}
		if strings.ContainsAny(rest, "/?#@") && !strings.EqualFold(rest, host) {
			t.Fatalf("OwnOrigin(%q, %q) accepted an origin with a path, query, fragment or user", origin, host)
		}
	})
}
