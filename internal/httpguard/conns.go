package httpguard

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of Limits.
const (
	DefaultMaxConnsPerClient = 1024
	// DefaultMaxConns caps the total; below it, half the process's
	// RLIMIT_NOFILE (the other half is headroom for the files, pipes and
	// sockets the server's work opens).
	DefaultMaxConns = 8192
)

// LogEvery is how often, at most, Conns logs that a limit was hit.
const LogEvery = time.Minute

// Limits bounds the connections of the listeners sharing a Conns.
type Limits struct {
	// MaxConns bounds the open connections of all listeners together
	// (default: DefaultMaxConns or half of RLIMIT_NOFILE, the smaller).
	MaxConns int
	// MaxConnsPerClient bounds the open connections of one client address
	// (an IPv4 address, or an IPv6 /64, which one host commonly holds
	// whole); default DefaultMaxConnsPerClient, at most MaxConns.
	MaxConnsPerClient int
}

// withDefaults fills in the defaults of l.
func (l Limits) withDefaults() Limits {
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
		var rl unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 && rl.Cur/2 < uint64(l.MaxConns) {
			l.MaxConns = max(int(rl.Cur/2), 1)
		}
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	l.MaxConnsPerClient = min(l.MaxConnsPerClient, l.MaxConns)
	return l
}

// Conns counts the open connections of one or more listeners (those of
// one process should share one) and refuses new ones past its Limits: a
// connection past a limit is accepted and closed at once, so that it holds
// no descriptor and the kernel's accept queue keeps moving for other
// clients. That a limit was hit is logged at most once per LogEvery for
// each limit ("total", "per-client") on its own, so that one kind's lines
// do not hide the other's, with the number of connections that limit
// refused since its last line.
type Conns struct {
	lim Limits
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex
	total     int
	perClient map[netip.Prefix]int
	refusals  map[string]*refusals // by limit
}

// refusals counts one limit's refusals since its last log line.
type refusals struct {
	count   int
	lastLog time.Time
}

// NewConns returns a Conns with limits l (defaults filled in), logging to
// log (nil: discard) on clock now (nil: time.Now).
func NewConns(l Limits, log *slog.Logger, now func() time.Time) *Conns {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Conns{lim: l.withDefaults(), log: log, now: now, perClient: map[netip.Prefix]int{}, refusals: map[string]*refusals{}}
}

// Limits returns the limits in force.
func (c *Conns) Limits() Limits { return c.lim }

// Open returns the number of open connections.
func (c *Conns) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Listen binds addr (Bind) and limits its connections.
func (c *Conns) Listen(addr string) (net.Listener, error) {
	ln, err := Bind(addr)
	if err != nil {
		return nil, err
	}
	return c.Listener(ln), nil
}

// Listener returns ln with its connections counted and limited by c.
func (c *Conns) Listener(ln net.Listener) net.Listener { return &limitedListener{Listener: ln, c: c} }

// clientOf is the address a connection's limit is counted against.
func clientOf(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// acquire counts a connection of client, or says which limit refuses it.
func (c *Conns) acquire(client netip.Prefix) (limit string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.total >= c.lim.MaxConns:
		return "total", false
	case c.perClient[client] >= c.lim.MaxConnsPerClient:
		return "per-client", false
	}
	c.total++
	c.perClient[client]++
	return "", true
}

func (c *Conns) release(client netip.Prefix) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.perClient[client]--; c.perClient[client] <= 0 {
		delete(c.perClient, client)
	}
}

// refuse notes a connection refused by limit and logs once per LogEvery
// for that limit.
func (c *Conns) refuse(ln net.Addr, limit string, client netip.Prefix) {
	c.mu.Lock()
	r := c.refusals[limit]
	if r == nil {
		r = &refusals{}
		c.refusals[limit] = r
	}
	r.count++
	now := c.now()
	if !r.lastLog.IsZero() && now.Sub(r.lastLog) < LogEvery {
		c.mu.Unlock()
		return
	}
	refused := r.count
	r.lastLog, r.count = now, 0
	c.mu.Unlock()
	max := c.lim.MaxConns
	if limit == "per-client" {
		max = c.lim.MaxConnsPerClient
	}
	c.log.Warn("connection limit reached: new connections are closed at once (logged at most once a minute)",
		"listener", ln.String(), "limit", limit, "max", max, "client", client.String(), "refused", refused)
}

type limitedListener struct {
	net.Listener
	c *Conns
}

// Accept returns the next connection within the limits, closing those
// past them.
func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientOf(conn.RemoteAddr())
		if limit, ok := l.c.acquire(client); !ok {
			l.c.refuse(l.Addr(), limit, client)
			conn.Close()
			continue
		}
		return &limitedConn{Conn: conn, release: sync.OnceFunc(func() { l.c.release(client) })}, nil
	}
}

type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// ReadFrom keeps the connection's own ReadFrom (sendfile, splice) for
// net/http's io.Copy to it.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }
