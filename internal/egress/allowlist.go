package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
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
	// It never opens a reserved range (loopback, private, link-local...) nor
	// an address of the host's own interfaces.
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
	// Prefix is set for RulePrefix (masked; IPv4-mapped, IPv4-compatible and
	// NAT64 64:ff9b::/96 forms are stored as the IPv4 they embed).
	Prefix netip.Prefix
	// Port restricts the rule to one destination TCP port (1-65535); 0
	// means every port.
	Port int
}

// String returns the entry in the form ParseRule accepts: the target,
// then ":PORT" when the rule has a port (IPv6 targets in brackets:
// "[::1]:8080", "[fd00::/8]:5432").
func (r Rule) String() string {
	var target string
	switch r.Kind {
	case RuleSuffix:
		target = "*." + r.Name
	case RuleAnyHost:
		target = "*"
	case RulePrefix:
		target = r.Prefix.String()
		if r.Prefix.IsSingleIP() {
			target = r.Prefix.Addr().String()
		}
		if r.Port != 0 && r.Prefix.Addr().Is6() {
			target = "[" + target + "]"
		}
	default:
		target = r.Name
	}
	if r.Port != 0 {
		return target + ":" + strconv.Itoa(r.Port)
	}
	return target
}

// PortsText describes the ports a rule covers: "all ports" or
// "port N only".
func (r Rule) PortsText() string {
	if r.Port == 0 {
		return "all ports"
	}
	return "port " + strconv.Itoa(r.Port) + " only"
}

// ParseRule parses one allowlist entry: an exact host, "*.suffix", "*", an
// IP address or a CIDR (IPv4 or IPv6), optionally followed by ":PORT" to
// restrict it to that port ("api.example.com:443", "127.0.0.1:8080",
// "10.0.0.0/8:5432", "[::1]:8080", "[fd00::/8]:5432"; an IPv6 address
// with a port needs the brackets, since "::1:8080" is itself an IPv6
// address). Schemes and paths are rejected with an error naming the entry
// and the accepted forms.
func ParseRule(entry string) (Rule, error) {
	s := strings.TrimSpace(entry)
	if s == "" {
		return Rule{}, fmt.Errorf("empty egress entry: use a host, *.suffix, an IP or a CIDR, optionally with :PORT")
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		return Rule{}, fmt.Errorf("egress entry %q: a scheme (%s://) is not allowed; give the host alone, e.g. %s", entry, scheme, host)
	}
	target, port, err := splitEntryPort(s)
	if err != nil {
		return Rule{}, fmt.Errorf("egress entry %q: %v", entry, err)
	}
	r, err := parseTarget(entry, target)
	if err != nil {
		return Rule{}, err
	}
	r.Port = port
	return r, nil
}

// splitEntryPort splits "TARGET:PORT" (or "[IPV6]:PORT") into the target
// and the port; an entry without a port gives port 0.
func splitEntryPort(s string) (string, int, error) {
	if _, err := netip.ParseAddr(s); err == nil {
		return s, 0, nil // an unbracketed IPv6 address never has a port
	}
	if _, err := netip.ParsePrefix(s); err == nil {
		return s, 0, nil
	}
	if rest, ok := strings.CutPrefix(s, "["); ok {
		inside, after, ok := strings.Cut(rest, "]")
		if !ok {
			return "", 0, fmt.Errorf("missing ] (write an IPv6 address with a port as [::1]:8080)")
		}
		_, errA := netip.ParseAddr(inside)
		_, errP := netip.ParsePrefix(inside)
		if errA != nil && errP != nil {
			return "", 0, fmt.Errorf("brackets hold an IP address or CIDR, not %q", inside)
		}
		if after == "" {
			return inside, 0, nil
		}
		portStr, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", 0, fmt.Errorf("unexpected %q after ] (the form is [::1]:8080)", after)
		}
		port, err := parsePort(portStr)
		return inside, port, err
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, 0, nil
	}
	target, portStr := s[:i], s[i+1:]
	if strings.Contains(target, ":") {
		if _, err := netip.ParsePrefix(target); err != nil {
			return "", 0, fmt.Errorf("not a host, IP or CIDR (a scheme or path is not allowed; write an IPv6 address with a port as [::1]:8080)")
		}
	}
	port, err := parsePort(portStr)
	return target, port, err
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535 (a scheme or path is not allowed)", s)
	}
	return n, nil
}

// parseTarget parses the part of an entry before any port.
func parseTarget(entry, s string) (Rule, error) {
	if s == "*" {
		return Rule{Kind: RuleAnyHost}, nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return Rule{Kind: RulePrefix, Prefix: canonicalPrefix(p.Masked()).Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		a = canonicalAddr(a.WithZone(""))
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
		return Rule{}, fmt.Errorf("egress entry %q: %v (use a host like api.example.com, *.example.com, an IP or a CIDR like 10.0.0.0/8, each optionally with :PORT)", entry, err)
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
	if r.Port != 0 {
		return Rule{}, fmt.Errorf("secret host %q: give the host without a port (the secret is used on every port of the host)", entry)
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

// canonicalAddr is the address the policy judges: zone dropped, and an
// IPv4 embedded in an IPv6 form (IPv4-mapped ::ffff:a.b.c.d, RFC 4291;
// IPv4-compatible ::a.b.c.d other than :: and ::1, RFC 4291 §2.5.5.1;
// NAT64 well-known prefix 64:ff9b::a.b.c.d, RFC 6052) becomes that IPv4,
// so that each form of 127.0.0.1 is as reserved as 127.0.0.1.
func canonicalAddr(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if a.Is4In6() {
		return a.Unmap()
	}
	if !a.Is6() {
		return a
	}
	b := a.As16()
	var v4 [4]byte
	copy(v4[:], b[12:])
	head := [12]byte(b[:12])
	notLoopbackOrUnspecified := v4[0]|v4[1]|v4[2] != 0 || v4[3] > 1
	compatible := head == [12]byte{} && notLoopbackOrUnspecified
	nat64 := head == [12]byte{0, 0x64, 0xff, 0x9b}
	if compatible || nat64 {
		return netip.AddrFrom4(v4)
	}
	return a
}

// canonicalPrefix maps a prefix lying inside an IPv4-embedding IPv6 range
// (at least /96 long) to the IPv4 prefix it embeds (see canonicalAddr).
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is6() && p.Bits() >= 96 {
		if a := canonicalAddr(p.Addr()); a.Is4() {
			return netip.PrefixFrom(a, p.Bits()-96)
		}
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

// matchesPort reports whether the rule covers the destination port.
func (r Rule) matchesPort(port int) bool { return r.Port == 0 || r.Port == port }

// reservedRanges are denied unless an allow entry lying inside the range
// lists them explicitly by IP or CIDR (RFC 1918, RFC 6598 CGNAT, RFC 3927
// link-local incl. the 169.254.169.254 metadata service, RFC 4193 ULA,
// RFC 4291 loopback/link-local/unspecified, RFC 8215 local-use NAT64,
// multicast and 240/4). IPv4 embedded in IPv6 is judged as IPv4 (see
// canonicalAddr).
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
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("ff00::/8"),
	}
}

// Allowlist is a parsed set of allow and deny rules. Deny wins over allow.
// The zero value denies everything.
//
// A host name passes when a host rule (exact, *.suffix or "*") allows it
// on the destination port; IP/CIDR rules never admit a name, they admit
// IP-literal destinations and open reserved ranges. Every address the name
// resolves to must then pass: none may be in a deny IP/CIDR, and an address
// in a reserved range (loopback, private, CGNAT, link-local/metadata, ULA,
// multicast...) needs an allow IP or CIDR that lies inside that range, so
// "0.0.0.0/0" or "*" never open them but "127.0.0.1" or "10.1.0.0/16" do.
// An address of one of the host's own interfaces (other than loopback,
// which its range covers) is reserved on its own: only an allow entry for
// exactly that IP opens it, because a service bound to 0.0.0.0 or :: on
// the host answers there as it does on loopback. A rule with a port
// covers that port only.
type Allowlist struct {
	allow, deny []Rule
	// hostAddrs are the canonical addresses of the host's interfaces
	// (loopback excluded), each reserved as a /32 or /128.
	hostAddrs map[netip.Addr]bool
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

// reserveHostAddrs marks the host's own interface addresses as reserved.
func (l *Allowlist) reserveHostAddrs(addrs []netip.Addr) {
	if l.hostAddrs == nil {
		l.hostAddrs = map[netip.Addr]bool{}
	}
	for _, a := range addrs {
		a = canonicalAddr(a)
		if a.IsValid() && !a.IsLoopback() {
			l.hostAddrs[a] = true
		}
	}
}

// reservedBlock returns the reserved block holding the canonical address a
// and what it is, if any: a host interface address first (its own /32 or
// /128), then the reserved ranges.
func (l *Allowlist) reservedBlock(a netip.Addr) (netip.Prefix, string, bool) {
	if l.hostAddrs[a] {
		return netip.PrefixFrom(a, a.BitLen()), "this host's own interface", true
	}
	for _, p := range reservedRanges() {
		if p.Contains(a) {
			return p, reservedKind(p), true
		}
	}
	return netip.Prefix{}, "", false
}

// nameVerdict is the host-name stage of a decision.
type nameVerdict int

const (
	nameUnlisted nameVerdict = iota
	nameAllowed
	nameDenied
)

// checkName applies the host rules to a lower-case host name and a
// destination port; the string is the matching rule.
func (l *Allowlist) checkName(name string, port int) (nameVerdict, string) {
	for _, r := range l.deny {
		if r.matchesName(name) && r.matchesPort(port) {
			return nameDenied, r.String()
		}
	}
	for _, r := range l.allow {
		if r.matchesName(name) && r.matchesPort(port) {
			return nameAllowed, r.String()
		}
	}
	return nameUnlisted, ""
}

// otherPortEntries lists the allow entries that match name on a port other
// than port (for the hint of a denial).
func (l *Allowlist) otherPortEntries(name string, port int) []string {
	var out []string
	for _, r := range l.allow {
		if r.Kind != RuleAnyHost && r.matchesName(name) && !r.matchesPort(port) {
			out = append(out, r.String())
		}
	}
	return out
}

// checkAddr decides one address to be dialed on port. nameOK says the host
// name already passed the allow rules. It returns "" when the address may
// be dialed, else the reason it may not.
func (l *Allowlist) checkAddr(a netip.Addr, port int, nameOK bool) string {
	orig := a.Unmap().WithZone("")
	policy := canonicalAddr(orig)
	shown := orig.String()
	if policy != orig {
		shown += " (a form of " + policy.String() + ")"
	}
	contains := func(r Rule) bool {
		return r.Kind == RulePrefix && r.matchesPort(port) && (r.Prefix.Contains(policy) || r.Prefix.Contains(orig))
	}
	for _, r := range l.deny {
		if contains(r) {
			return fmt.Sprintf("%s is denied by the entry %s", shown, r)
		}
	}
	if block, kind, reserved := l.reservedBlock(policy); reserved {
		for _, r := range l.allow {
			if r.Kind == RulePrefix && r.matchesPort(port) && r.Prefix.Contains(policy) && r.Prefix.Bits() >= block.Bits() {
				return ""
			}
		}
		if block.IsSingleIP() {
			return fmt.Sprintf("%s is an address of %s, denied unless that exact IP is allowlisted (\"*\" and CIDRs do not open it)", shown, kind)
		}
		return fmt.Sprintf("%s is a %s address (%s), denied unless that IP or a CIDR inside %s is allowlisted", shown, kind, block, block)
	}
	if nameOK {
		return ""
	}
	for _, r := range l.allow {
		if contains(r) || r.Kind == RuleAnyHost && r.matchesPort(port) {
			return ""
		}
	}
	return fmt.Sprintf("%s is not in the allowlist on port %d", shown, port)
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
	case p == netip.MustParsePrefix("64:ff9b:1::/48"):
		return "local-use NAT64"
	}
	return "reserved"
}

// OpensReserved reports whether the allow entry r opens, as an Allowlist
// judges it, a reserved range (loopback, private, link-local/metadata...)
// or one of the host's own interface addresses (hostAddrs, as
// net.InterfaceAddrs lists them): an IP or CIDR rule lying inside one.
// Name rules ("*", hosts) and wider CIDRs ("0.0.0.0/0") never open them.
// The string says what r opens. A caller that takes allow entries from a
// less trusted party (hermes sandbox serve's network.allowOut) refuses
// such entries, leaving them to the operator's own configuration.
func OpensReserved(r Rule, hostAddrs []net.Addr) (string, bool) {
	if r.Kind != RulePrefix {
		return "", false
	}
	a := canonicalAddr(r.Prefix.Addr())
	if r.Prefix.IsSingleIP() {
		for _, h := range netAddrsToIPs(hostAddrs) {
			if h = canonicalAddr(h); h == a && !h.IsLoopback() {
				return "an address of this host's own interface", true
			}
		}
	}
	for _, b := range reservedRanges() {
		if b.Contains(a) && r.Prefix.Bits() >= b.Bits() {
			return fmt.Sprintf("the %s range %s", reservedKind(b), b), true
		}
	}
	return "", false
}
