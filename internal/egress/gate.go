package egress

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Resolver resolves host names on the host side. *net.Resolver satisfies
// it; tests inject a fake. network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configures a Gate.
type Options struct {
	// Home is HERMES_HOME: secrets are read from Home/secrets/secrets.json
	// at every NewBox, and the audit log defaults to Home/logs/egress.jsonl.
	Home string
	// Allow and Deny are terminal.box_network.allow / .deny entries (see
	// ParseRule). Deny wins. Hosts bound to a secret are allowed implicitly
	// (unless denied).
	Allow, Deny []string
	// Secrets are added to (and override by name) the ones in the store.
	Secrets []Secret
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// RootCAs verifies upstream certificates of intercepted hosts; nil
	// means the system roots.
	RootCAs *x509.CertPool
	// CAFile is terminal.box_network.ca_file: a PEM bundle of private CA
	// certificates that New adds to RootCAs (or to the system roots), for
	// upstreams of intercepted hosts signed by a private CA. "~/" is the
	// user's home; a relative path is relative to Home. "" adds none.
	CAFile string
	// InterfaceAddrs lists the host's own interface addresses, which are
	// reserved like loopback (see Allowlist); New calls it once. nil means
	// net.InterfaceAddrs.
	InterfaceAddrs func() ([]net.Addr, error)
	// AuditPath is the JSONL audit log; "" means Home/logs/egress.jsonl.
	AuditPath string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// DialTimeout bounds each upstream TCP dial (default 10 s).
	DialTimeout time.Duration
	// BoxMemoryMiB is the memory limit of the boxes (MiB,
	// terminal.container_memory; 0 means 5120): each box's Limits are
	// derived from it (LimitsForMemory).
	BoxMemoryMiB int
	// Limits overrides the derived per-box limits field by field (zero
	// fields keep the derived value).
	Limits Limits
	// Audit bounds the audit log; zero fields take the defaults of
	// AuditLimits.
	Audit AuditLimits
}

// Gate is the host-side egress gate shared by all boxes of a process: one
// allowlist, one audit log, and a BoxSession per box.
type Gate struct {
	opts      Options
	allowlist *Allowlist
	audit     *auditLog
}

// New validates the options and returns a Gate. Errors name the bad
// allowlist entry or secret.
func New(opts Options) (*Gate, error) {
	l, err := NewAllowlist(opts.Allow, opts.Deny)
	if err != nil {
		return nil, err
	}
	if opts.InterfaceAddrs == nil {
		opts.InterfaceAddrs = net.InterfaceAddrs
	}
	ifAddrs, err := opts.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("egress: listing the host's interface addresses (to keep boxes off them): %v", err)
	}
	l.reserveHostAddrs(netAddrsToIPs(ifAddrs))
	if opts.CAFile != "" {
		if opts.RootCAs, err = addCAFile(opts.RootCAs, opts.CAFile, opts.Home); err != nil {
			return nil, err
		}
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.AuditPath == "" {
		if opts.Home == "" {
			return nil, fmt.Errorf("egress: Options.Home or Options.AuditPath is required")
		}
		opts.AuditPath = AuditPath(opts.Home)
	}
	for _, s := range opts.Secrets {
		if err := s.validate(); err != nil {
			return nil, err
		}
	}
	opts.Limits = opts.Limits.withDefaults(opts.BoxMemoryMiB)
	return &Gate{opts: opts, allowlist: l, audit: newAuditLog(opts.AuditPath, opts.Audit, opts.Now)}, nil
}

// netAddrsToIPs keeps the IP of each interface address (*net.IPNet or
// *net.IPAddr).
func netAddrsToIPs(addrs []net.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, addr.Unmap())
		}
	}
	return out
}

// addCAFile appends the PEM certificates of path to pool (a copy of the
// system roots when pool is nil). Errors name the file and the key.
func addCAFile(pool *x509.CertPool, path, home string) (*x509.CertPool, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if dir, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(dir, rest)
		}
	} else if !filepath.IsAbs(path) && home != "" {
		path = filepath.Join(home, path)
	}
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("terminal.box_network.ca_file: %v (fix the path with `hermes config set terminal.box_network.ca_file PATH`)", err)
	}
	if pool == nil {
		if pool, err = x509.SystemCertPool(); err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
	} else {
		pool = pool.Clone()
	}
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("terminal.box_network.ca_file: %s holds no PEM certificate (expected -----BEGIN CERTIFICATE----- blocks)", path)
	}
	return pool, nil
}

// AuditPath is the audit log of HERMES_HOME: home/logs/egress.jsonl.
func AuditPath(home string) string { return filepath.Join(home, "logs", "egress.jsonl") }

// boxSecret is one secret as one box sees it.
type boxSecret struct {
	name, value, placeholder string
	hosts                    []Rule
}

func (s *boxSecret) boundTo(host string) bool {
	for _, r := range s.hosts {
		if r.matchesName(host) {
			return true
		}
	}
	return false
}

// box is the egress state of one box behind a BoxSession.
type box struct {
	gate      *Gate
	task      string
	secrets   []*boxSecret
	ca        *certAuthority
	transport *http.Transport
	redactor  *redactor // every secret of the box, built once per box
	limits    Limits
	conns     budget // connections served now
	buffered  budget // request-body bytes held for substitution now
}

// NewBox loads the secrets, mints the box's CA and one fresh placeholder per
// secret ("hermes-secret-NAME-<32 hex>": only URL-unreserved characters, so
// no client percent-encodes it in a query, path or form), and returns the session whose Env
// the box exports. taskID names the box in the audit log.
func (g *Gate) NewBox(taskID string) (*BoxSession, error) {
	secrets, err := g.loadSecrets()
	if err != nil {
		return nil, err
	}
	b := &box{gate: g, task: taskID, limits: g.opts.Limits}
	b.conns.limit = int64(b.limits.MaxConns)
	b.buffered.limit = b.limits.MaxBuffered
	var names []string
	for _, s := range secrets {
		bs := &boxSecret{name: s.Name, value: s.Value, placeholder: newPlaceholder(s.Name)}
		for _, h := range s.Hosts {
			r, err := ParseHostPattern(h)
			if err != nil {
				return nil, fmt.Errorf("secret %s: %w", s.Name, err)
			}
			bs.hosts = append(bs.hosts, r)
			names = append(names, r.Name)
		}
		b.secrets = append(b.secrets, bs)
	}
	b.redactor = newRedactor(b.secrets)
	b.ca, err = newCertAuthority(g.opts.Now, names)
	if err != nil {
		return nil, err
	}
	b.transport = b.newTransport()
	return &BoxSession{
		Env:       b.env(),
		CACertPEM: b.ca.certPEM,
		serve:     b.serve,
		close: func() error {
			b.transport.CloseIdleConnections()
			return nil
		},
	}, nil
}

func (g *Gate) loadSecrets() ([]Secret, error) {
	var stored []Secret
	if g.opts.Home != "" {
		var err error
		if stored, err = LoadSecrets(g.opts.Home); err != nil {
			return nil, err
		}
	}
	byName := map[string]int{}
	for i, s := range stored {
		byName[s.Name] = i
	}
	for _, s := range g.opts.Secrets {
		if i, ok := byName[s.Name]; ok {
			stored[i] = s
		} else {
			stored = append(stored, s)
		}
	}
	return stored, nil
}

func newPlaceholder(name string) string {
	var r [16]byte
	rand.Read(r[:]) // never fails (crypto/rand, Go ≥ 1.24)
	return "hermes-secret-" + name + "-" + hex.EncodeToString(r[:])
}

// decision is the verdict on one destination.
type decision struct {
	host    string // lower-case, no brackets
	port    int
	allowed bool
	reason  string       // why (audit); for a deny also the first half of the 403 line
	hint    string       // how to allow, for a deny
	addrs   []netip.Addr // checked addresses to dial, in order
	secrets []*boxSecret // secrets bound to host (non-empty: intercept TLS)
}

// denyLine is the one-line explanation a denied client sees.
func (d decision) denyLine() string {
	s := fmt.Sprintf("hermes egress denied %s: %s", net.JoinHostPort(d.host, strconv.Itoa(d.port)), d.reason)
	if d.hint != "" {
		s += "; " + d.hint
	}
	return s
}

// decide applies the allowlist to host:port, resolving the name on the host
// and checking every address it resolves to.
func (b *box) decide(ctx context.Context, host string, port int) decision {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	d := decision{host: host, port: port}
	l := b.gate.allowlist
	if port <= 0 || port > 65535 {
		d.reason = "invalid port"
		return d
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap().WithZone("")
		d.host = a.String()
		if why := l.checkAddr(a, port, false); why != "" {
			d.reason = why
			d.hint = "allow it with `hermes egress allow " + hostRule(a, port).String() +
				"` (or without :" + strconv.Itoa(port) + " for every port)"
			return d
		}
		if name := b.secretHostAt(ctx, a); name != "" {
			d.reason = fmt.Sprintf("%s is an address of %s, which is bound to secrets (its responses are redacted only when it is reached by name)", a, name)
			d.hint = "connect to " + name + " by name"
			return d
		}
		d.allowed, d.reason, d.addrs = true, "address allowlisted", []netip.Addr{a}
		return d
	}
	if err := validHostName(host); err != nil {
		d.reason = fmt.Sprintf("%q is not a valid host name", host)
		return d
	}
	verdict, rule := l.checkName(host, port)
	if verdict == nameDenied {
		d.reason = fmt.Sprintf("%s is denied by the entry %s", host, rule)
		d.hint = "remove it with `hermes egress deny --remove " + rule + "`"
		return d
	}
	for _, s := range b.secrets {
		if s.boundTo(host) {
			d.secrets = append(d.secrets, s)
		}
	}
	if verdict == nameUnlisted && len(d.secrets) > 0 {
		verdict, rule = nameAllowed, "secret host"
	}
	if verdict == nameUnlisted {
		d.reason = host + " is not in the allowlist"
		d.hint = "allow it with `hermes egress allow " + host + "`"
		if others := l.otherPortEntries(host, port); len(others) > 0 {
			d.reason = fmt.Sprintf("%s is allowed only by %s, not on port %d", host, strings.Join(others, ", "), port)
			d.hint = "allow it with `hermes egress allow " + host + ":" + strconv.Itoa(port) + "`"
		}
		return d
	}
	rctx, cancel := context.WithTimeout(ctx, b.gate.opts.DialTimeout)
	defer cancel()
	addrs, err := b.gate.opts.Resolver.LookupNetIP(rctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		d.reason = "cannot resolve " + host
		return d
	}
	for i, a := range addrs {
		a = a.Unmap().WithZone("")
		addrs[i] = a
		if why := l.checkAddr(a, port, true); why != "" {
			// "vm resolves to 127.0.0.1, which is a loopback address (...)":
			// why is a sentence about the address ("127.0.0.1 is ...").
			d.reason = host + " resolves to " + strings.Replace(why, " is ", ", which is ", 1)
			d.hint = "if this is intended, allow it with `hermes egress allow " + hostRule(a, port).String() + "`"
			return d
		}
	}
	d.allowed, d.addrs, d.reason = true, addrs, "allowed by "+rule
	return d
}

// hostRule is the narrowest allow entry for one address and port.
func hostRule(a netip.Addr, port int) Rule {
	a = canonicalAddr(a)
	return Rule{Kind: RulePrefix, Prefix: netip.PrefixFrom(a, a.BitLen()), Port: port}
}

// dialPinned dials the checked addresses of d in order and returns the first
// connection; it never resolves the name again.
func (b *box) dialPinned(ctx context.Context, d decision) (net.Conn, error) {
	dialer := net.Dialer{Timeout: b.gate.opts.DialTimeout}
	var firstErr error
	for _, a := range d.addrs {
		c, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(d.port)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("connect %s: %v", net.JoinHostPort(d.host, strconv.Itoa(d.port)), firstErr)
}
