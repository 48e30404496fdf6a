package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for entry, want := range map[string]string{
		"API.Example.com.": "api.example.com", "*.example.com": "*.example.com", "*": "*",
		"10.0.0.0/8": "10.0.0.0/8", "10.1.2.3/8": "10.0.0.0/8", "192.0.2.7": "192.0.2.7",
		"2001:db8::/32": "2001:db8::/32", "[::1]": "::1", "::ffff:10.0.0.1": "10.0.0.1",
	} {
		r, err := ParseRule(entry)
		if err != nil || r.String() != want {
			t.Errorf("ParseRule(%q) = %v, %v; want %s", entry, r, err, want)
		}
	}
	for _, bad := range []string{"", "https://example.com", "example.com:0", "example.com:65536", "example.com:http", "a.*.com", "*example.com", "exa mple.com", "example.com/path", "*.", "10.0.0.0/33"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted a bad entry", bad)
		}
	}
	if _, err := ParseHostPattern("10.0.0.1"); err == nil {
		t.Error("a secret may not be bound to an IP")
	}
	if _, err := NewAllowlist([]string{"ok.test", "bad entry"}, nil); err == nil || !strings.Contains(err.Error(), "terminal.box_network.allow") || !strings.Contains(err.Error(), "bad entry") {
		t.Errorf("error does not name the key and entry: %v", err)
	}
}

func TestSuffixPatternMatchesSubdomainsNotApex(t *testing.T) {
	l, _ := NewAllowlist([]string{"*.example.com"}, nil)
	for name, want := range map[string]nameVerdict{
		"api.example.com": nameAllowed, "a.b.example.com": nameAllowed,
		"example.com": nameUnlisted, "badexample.com": nameUnlisted, "example.com.evil.test": nameUnlisted,
	} {
		if got, _ := l.checkName(name, 443); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestReservedRangesNeedAnExplicitEntryInsideThem(t *testing.T) {
	l, _ := NewAllowlist([]string{"*", "0.0.0.0/0", "::/0", "127.0.0.1", "10.1.0.0/16", "fd00:1::/32"}, []string{"10.1.2.0/24"})
	for addr, allowed := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": false, "10.1.9.9": true, "10.1.2.3": false /* denied */, "10.2.0.1": false,
		"172.16.0.1": false, "192.168.0.1": false, "100.64.0.1": false, "169.254.169.254": false, "0.0.0.0": false,
		"::1": false, "fe80::1": false, "fd00:1::5": true, "fd00:2::5": false, "224.0.0.1": false,
		"8.8.8.8": true, "2001:4860::1": true, "::ffff:127.0.0.2": false,
	} {
		why := l.checkAddr(netip.MustParseAddr(addr), 443, true)
		if (why == "") != allowed {
			t.Errorf("%s: reason %q, want allowed=%v", addr, why, allowed)
		}
	}
	// Without "*" or a CIDR, a public IP literal is not allowed either.
	l2, _ := NewAllowlist([]string{"example.com"}, nil)
	if why := l2.checkAddr(netip.MustParseAddr("8.8.8.8"), 443, false); !strings.Contains(why, "not in the allowlist") {
		t.Errorf("public IP literal: %q", why)
	}
}

func TestParseRuleWithPorts(t *testing.T) {
	for entry, want := range map[string]struct {
		text string
		port int
	}{
		"127.0.0.1:8080":      {"127.0.0.1:8080", 8080},
		"API.example.com:443": {"api.example.com:443", 443},
		"[::1]:8080":          {"[::1]:8080", 8080},
		"10.0.0.0/8:5432":     {"10.0.0.0/8:5432", 5432},
		"fd00::/8:5432":       {"[fd00::/8]:5432", 5432},
		"[fd00::/8]:5432":     {"[fd00::/8]:5432", 5432},
		"*.example.com:443":   {"*.example.com:443", 443},
		"*:443":               {"*:443", 443},
		"api.example.com":     {"api.example.com", 0},
		"2001:db8::1:8080":    {"2001:db8::1:8080", 0}, // an IPv6 address, not port 8080
	} {
		r, err := ParseRule(entry)
		if err != nil || r.String() != want.text || r.Port != want.port {
			t.Errorf("ParseRule(%q) = %q port %d, %v; want %q port %d", entry, r, r.Port, err, want.text, want.port)
			continue
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Errorf("%q does not round-trip: %v %v", r.String(), again, err)
		}
	}
	for _, bad := range []string{"[::1]8080", "[example.com]:80", "[::1", "a.test:80:90", "a.test:", "10.0.0.0/8:"} {
		if _, err := ParseRule(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRule(%q): %v, want an error naming the entry", bad, err)
		}
	}
	if _, err := ParseHostPattern("api.example.com:443"); err == nil || !strings.Contains(err.Error(), "without a port") {
		t.Errorf("a secret host with a port: %v", err)
	}
}

func TestPortRestrictedEntriesCoverOnlyTheirPort(t *testing.T) {
	l, err := NewAllowlist([]string{"api.example.com:443", "127.0.0.1:8080", "[::1]:8080", "10.0.0.0/8:5432", "*:443", "open.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		port int
		want nameVerdict
	}{
		{"api.example.com", 443, nameAllowed}, {"api.example.com", 80, nameUnlisted},
		{"other.example.com", 443, nameAllowed}, {"other.example.com", 22, nameUnlisted}, // "*:443"
		{"open.example.com", 22, nameAllowed}, {"open.example.com", 443, nameAllowed},
	} {
		if got, _ := l.checkName(tc.name, tc.port); got != tc.want {
			t.Errorf("%s:%d: %v, want %v", tc.name, tc.port, got, tc.want)
		}
	}
	for _, tc := range []struct {
		addr    string
		port    int
		allowed bool
	}{
		{"127.0.0.1", 8080, true}, {"127.0.0.1", 8081, false}, {"::1", 8080, true}, {"::1", 22, false},
		{"10.9.8.7", 5432, true}, {"10.9.8.7", 22, false},
		{"8.8.8.8", 443, true}, {"8.8.8.8", 80, false}, // literal public IP through "*:443"
	} {
		why := l.checkAddr(netip.MustParseAddr(tc.addr), tc.port, false)
		if (why == "") != tc.allowed {
			t.Errorf("%s port %d: reason %q, want allowed=%v", tc.addr, tc.port, why, tc.allowed)
		}
	}
	// Deny entries with a port deny that port only.
	l2, _ := NewAllowlist([]string{"*.example.com", "10.0.0.0/8"}, []string{"admin.example.com:22", "10.0.0.1:6379"})
	if v, _ := l2.checkName("admin.example.com", 22); v != nameDenied {
		t.Errorf("admin.example.com:22: %v, want denied", v)
	}
	if v, _ := l2.checkName("admin.example.com", 443); v != nameAllowed {
		t.Errorf("admin.example.com:443: %v, want allowed", v)
	}
	if why := l2.checkAddr(netip.MustParseAddr("10.0.0.1"), 6379, false); !strings.Contains(why, "denied by the entry 10.0.0.1:6379") {
		t.Errorf("10.0.0.1:6379: %q", why)
	}
	if why := l2.checkAddr(netip.MustParseAddr("10.0.0.1"), 5432, false); why != "" {
		t.Errorf("10.0.0.1:5432: %q", why)
	}
}

func TestEmbeddedIPv4FormsAreJudgedAsTheIPv4(t *testing.T) {
	open, _ := NewAllowlist([]string{"*", "0.0.0.0/0", "::/0"}, []string{"9.9.9.9"})
	for _, addr := range []string{
		"64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "::7f00:1", "::a00:1", "::ffff:7f00:1",
		"64:ff9b:1::1",     // RFC 8215 local-use NAT64
		"64:ff9b::909:909", // NAT64 form of the denied 9.9.9.9
	} {
		if why := open.checkAddr(netip.MustParseAddr(addr), 80, false); why == "" {
			t.Errorf("%s passed under \"*\" and ::/0; it embeds a reserved or denied IPv4", addr)
		}
	}
	if why := open.checkAddr(netip.MustParseAddr("64:ff9b::7f00:1"), 80, false); !strings.Contains(why, "a form of 127.0.0.1") || !strings.Contains(why, "loopback") {
		t.Errorf("NAT64 loopback denial does not explain itself: %q", why)
	}
	if why := open.checkAddr(netip.MustParseAddr("64:ff9b::808:808"), 443, false); why != "" {
		t.Errorf("NAT64 form of a public IPv4 under \"*\": %q", why)
	}
	// Listing the IPv4 opens its embedded forms, and an entry written in an
	// embedded form is stored as the IPv4.
	lo, _ := NewAllowlist([]string{"64:ff9b::7f00:1"}, nil)
	if got := lo.allow[0].String(); got != "127.0.0.1" {
		t.Errorf("64:ff9b::7f00:1 parsed as %s, want 127.0.0.1", got)
	}
	for _, addr := range []string{"127.0.0.1", "64:ff9b::7f00:1", "::7f00:1", "::ffff:127.0.0.1"} {
		if why := lo.checkAddr(netip.MustParseAddr(addr), 80, false); why != "" {
			t.Errorf("%s with 127.0.0.1 listed: %q", addr, why)
		}
	}
	// :: and ::1 are not IPv4-compatible forms.
	for _, addr := range []string{"::", "::1"} {
		if got := canonicalAddr(netip.MustParseAddr(addr)); got.Is4() {
			t.Errorf("%s canonicalised to %s", addr, got)
		}
	}
}

func TestHostInterfaceAddressesNeedTheirExactIP(t *testing.T) {
	l, _ := NewAllowlist([]string{"*", "0.0.0.0/0", "::/0", "192.0.2.0/24", "10.0.0.0/8", "10.0.0.9:5432"}, nil)
	l.reserveHostAddrs([]netip.Addr{
		netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"),
		netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("127.0.0.1"),
	})
	for _, tc := range []struct {
		addr    string
		port    int
		allowed bool
	}{
		{"192.0.2.10", 80, false}, {"::ffff:192.0.2.10", 80, false}, {"64:ff9b::c000:20a", 80, false}, {"::c000:20a", 80, false},
		{"2001:db8::10", 80, false}, {"10.0.0.5", 80, false}, // inside an allowed CIDR, still the host's own
		{"10.0.0.9", 5432, true}, {"10.0.0.9", 22, false}, // exact IP:port listed
		{"192.0.2.11", 80, true}, {"2001:db8::11", 80, true}, {"10.0.0.6", 80, true}, // neighbours are not the host
	} {
		why := l.checkAddr(netip.MustParseAddr(tc.addr), tc.port, true)
		if (why == "") != tc.allowed {
			t.Errorf("%s port %d: reason %q, want allowed=%v", tc.addr, tc.port, why, tc.allowed)
		}
		if !tc.allowed && tc.addr == "192.0.2.10" && !strings.Contains(why, "this host's own interface") {
			t.Errorf("denial does not say why: %q", why)
		}
	}
	// Loopback stays governed by its range: 127.0.0.0/8 still opens it.
	lo, _ := NewAllowlist([]string{"127.0.0.0/8"}, nil)
	lo.reserveHostAddrs([]netip.Addr{netip.MustParseAddr("127.0.0.1")})
	if why := lo.checkAddr(netip.MustParseAddr("127.0.0.1"), 80, false); why != "" {
		t.Errorf("127.0.0.1 with 127.0.0.0/8 listed: %q", why)
	}
}
