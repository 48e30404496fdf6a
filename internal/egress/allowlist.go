package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// RuleKind says what a Rule matches.
type RuleKind int

const (
	// RuleHost matches one exact host name ("api.github.com").
	RuleHost RuleKind = iota + 1
	// RuleSuffix matches every subdomain of a name ("*.github.com" matches
	// "api.github.com" and "a.b.github.com" but NOT the apex "github.com";
	// list the apex separately when it is wanted).
	RuleSuffix
	// RuleAnyHost is the entry "*": every host name and every public IP.
	// It never opens a reserved range (loopback, private, link-local...).
	RuleAnyHost
	// RulePrefix matches an IP address or CIDR ("10.1.2.3", "10.0.0.0/8",
	// "fd00::/8"); a bare IP is a /32 or /128.
	RulePrefix
)

// Rule is one parsed allow or deny entry of terminal.box_network.
type Rule struct {
	Kind RuleKind
	// Name is the lower-case host (RuleHost) or the suffix without "*."
	// (RuleSuffix).
	Name string
	// Prefix is set for RulePrefix (masked, IPv4 unmapped).
	Prefix netip.Prefix
}

// String returns the entry in the form ParseRule accepts.
func (r Rule) String() string {
	switch r.Kind {
	case RuleSuffix:
		return "*." + r.Name
	case RuleAnyHost:
		return "*"
	case RulePrefix:
		if r.Prefix.IsSingleIP() {
			return r.Prefix.Addr().String()
		}
		return r.Prefix.String()
	}
	return r.Name
}

// ParseRule parses one allowlist entry: an exact host, "*.suffix", "*", an
// IP address or a CIDR (IPv4 or IPv6). Schemes, ports and paths are
// rejected with an error naming the entry and the accepted forms.
func ParseRule(entry string) (Rule, error) {
	s := strings.TrimSpace(entry)
	if s == "" {
		return Rule{}, fmt.Errorf("empty egress entry: use a host, *.suffix, an IP or a CIDR")
	}
	if s == "*" {
		return Rule{Kind: RuleAnyHost}, nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return Rule{Kind: RulePrefix, Prefix: unmapPrefix(p).Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		a = a.Unmap().WithZone("")
		return Rule{Kind: RulePrefix, Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if suffix, ok := strings.CutPrefix(name, "*."); ok {
		if err := validHostName(suffix); err != nil {
			return Rule{}, fmt.Errorf("egress entry %q: %v (a pattern is *.example.com)", entry, err)
		}
		return Rule{Kind: RuleSuffix, Name: suffix}, nil
	}
	if err := validHostName(name); err != nil {
		return Rule{}, fmt.Errorf("egress entry %q: %v (use a host like api.example.com, *.example.com, an IP or a CIDR like 10.0.0.0/8)", entry, err)
	}
	return Rule{Kind: RuleHost, Name: name}, nil
}

// ParseHostPattern parses a secret's host binding: an exact host or
// "*.suffix" (no IPs, no "*": interception needs a host name).
func ParseHostPattern(entry string) (Rule, error) {
	r, err := ParseRule(entry)
	if err != nil {
		return Rule{}, err
	}
	if r.Kind != RuleHost && r.Kind != RuleSuffix {
		return Rule{}, fmt.Errorf("secret host %q: must be a host name like api.example.com or *.example.com", entry)
	}
	return r, nil
}

func validHostName(s string) error {
	if s == "" || len(s) > 253 {
		return fmt.Errorf("not a host name")
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("empty or too long label in host name")
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// matchesName reports whether a host rule matches the lower-case name.
func (r Rule) matchesName(name string) bool {
	switch r.Kind {
	case RuleHost:
		return name == r.Name
	case RuleSuffix:
		return strings.HasSuffix(name, "."+r.Name)
	case RuleAnyHost:
		return true
	}
	return false
}

// reservedRanges are denied unless an allow entry lying inside the range
// lists them explicitly by IP or CIDR (RFC 1918, RFC 6598 CGNAT, RFC 3927
// link-local incl. the 169.254.169.254 metadata service, RFC 4193 ULA,
// RFC 4291 loopback/link-local/unspecified, multicast and 240/4).
func reservedRanges() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("224.0.0.0/4"),
		netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("::/128"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("ff00::/8"),
	}
}

// reservedRange returns the reserved range holding a, if any.
func reservedRange(a netip.Addr) (netip.Prefix, bool) {
	for _, p := range reservedRanges() {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// Allowlist is a parsed set of allow and deny rules. Deny wins over allow.
// The zero value denies everything.
//
// A host name passes when a host rule (exact, *.suffix or "*") allows it;
// IP/CIDR rules never admit a name, they admit IP-literal destinations and
// open reserved ranges. Every address the name resolves to must then pass:
// none may be in a deny IP/CIDR, and an address in a reserved range
// (loopback, private, CGNAT, link-local/metadata, ULA, multicast...) needs
// an allow IP or CIDR that lies inside that range, so "0.0.0.0/0" or "*"
// never open them but "127.0.0.1" or "10.1.0.0/16" do.
type Allowlist struct {
	allow, deny []Rule
}

// NewAllowlist parses allow and deny entries (see ParseRule); the error
// names the first bad entry and the list it is in.
func NewAllowlist(allow, deny []string) (*Allowlist, error) {
	l := &Allowlist{}
	for _, e := range allow {
		r, err := ParseRule(e)
		if err != nil {
			return nil, fmt.Errorf("terminal.box_network.allow: %w", err)
		}
		l.allow = append(l.allow, r)
	}
	for _, e := range deny {
		r, err := ParseRule(e)
		if err != nil {
			return nil, fmt.Errorf("terminal.box_network.deny: %w", err)
		}
		l.deny = append(l.deny, r)
	}
	return l, nil
}

// nameVerdict is the host-name stage of a decision.
type nameVerdict int

const (
	nameUnlisted nameVerdict = iota
	nameAllowed
	nameDenied
)

// checkName applies the host rules to a lower-case host name; the string
// is the matching rule.
func (l *Allowlist) checkName(name string) (nameVerdict, string) {
	for _, r := range l.deny {
		if r.matchesName(name) {
			return nameDenied, r.String()
		}
	}
	for _, r := range l.allow {
		if r.matchesName(name) {
			return nameAllowed, r.String()
		}
	}
	return nameUnlisted, ""
}

// checkAddr decides one address to be dialed. nameOK says the host name
// already passed the allow rules. It returns "" when the address may be
// dialed, else the reason it may not.
func (l *Allowlist) checkAddr(a netip.Addr, nameOK bool) string {
	a = a.Unmap().WithZone("")
	for _, r := range l.deny {
		if r.Kind == RulePrefix && r.Prefix.Contains(a) {
			return fmt.Sprintf("%s is denied by the entry %s", a, r)
		}
	}
	explicit := false // an allow IP/CIDR contains a
	if block, reserved := reservedRange(a); reserved {
		for _, r := range l.allow {
			if r.Kind == RulePrefix && r.Prefix.Contains(a) && r.Prefix.Bits() >= block.Bits() {
				explicit = true
				break
			}
		}
		if !explicit {
			return fmt.Sprintf("%s is a %s address (%s), denied unless that IP or a CIDR inside %s is allowlisted", a, reservedKind(block), block, block)
		}
		return ""
	}
	if nameOK {
		return ""
	}
	for _, r := range l.allow {
		if r.Kind == RulePrefix && r.Prefix.Contains(a) || r.Kind == RuleAnyHost {
			return ""
		}
	}
	return fmt.Sprintf("%s is not in the allowlist", a)
}

func reservedKind(p netip.Prefix) string {
	a := p.Addr()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local/metadata"
	case a.IsMulticast():
		return "multicast"
	case p == netip.MustParsePrefix("100.64.0.0/10"):
		return "carrier-grade NAT"
	}
	return "reserved"
}
