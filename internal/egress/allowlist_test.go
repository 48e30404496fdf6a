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
	for _, bad := range []string{"", "https://example.com", "example.com:443", "a.*.com", "*example.com", "exa mple.com", "example.com/path", "*.", "10.0.0.0/33"} {
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
		if got, _ := l.checkName(name); got != want {
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
		why := l.checkAddr(netip.MustParseAddr(addr), true)
		if (why == "") != allowed {
			t.Errorf("%s: reason %q, want allowed=%v", addr, why, allowed)
		}
	}
	// Without "*" or a CIDR, a public IP literal is not allowed either.
	l2, _ := NewAllowlist([]string{"example.com"}, nil)
	if why := l2.checkAddr(netip.MustParseAddr("8.8.8.8"), false); !strings.Contains(why, "not in the allowlist") {
		t.Errorf("public IP literal: %q", why)
	}
}
