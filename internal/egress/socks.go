package egress

import (
	"context"
	"encoding/binary"
	"io"
	"net/netip"
	"strconv"
	"time"
)

// SOCKS5 constants (RFC 1928).
const (
	socksVersion      = 0x05
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff
	socksCmdConnect   = 0x01
	socksAtypIPv4     = 0x01
	socksAtypDomain   = 0x03
	socksAtypIPv6     = 0x04
	socksSucceeded    = 0x00
	socksGeneralFail  = 0x01
	socksNotAllowed   = 0x02 // "connection not allowed by ruleset"
	socksHostUnreach  = 0x04
	socksCmdNotSupp   = 0x07
	socksAtypNotSupp  = 0x08
)

// serveSOCKS serves one SOCKS5 connection: no authentication, CONNECT only,
// IPv4, IPv6 or domain targets (the domain is resolved here, never in the
// box), the allowlist applied. The negotiation must finish within
// Limits.HandshakeTimeout. Other hosts are tunnelled blind; a host bound
// to secrets is intercepted exactly as after CONNECT (TLS terminated with
// the box CA, placeholders substituted, responses redacted), and a
// connection to it that does not start with a TLS handshake is closed.
func (b *box) serveSOCKS(ctx context.Context, c *bufferedConn) {
	c.SetDeadline(time.Now().Add(b.limits.HandshakeTimeout))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != socksVersion {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		c.Write([]byte{socksVersion, socksNoAcceptable})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	var host string
	switch req[3] {
	case socksAtypIPv4, socksAtypIPv6:
		n := 4
		if req[3] == socksAtypIPv6 {
			n = 16
		}
		ip := make([]byte, n)
		if _, err := io.ReadFull(c, ip); err != nil {
			return
		}
		a, _ := netip.AddrFromSlice(ip)
		host = a.Unmap().String()
	case socksAtypDomain:
		var l [1]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		name := make([]byte, l[0])
		if _, err := io.ReadFull(c, name); err != nil {
			return
		}
		host = string(name)
	default:
		socksReply(c, socksAtypNotSupp)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(c, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	rec := AuditRecord{Proto: "socks5", Method: "CONNECT", Host: host, Port: port}
	if req[1] != socksCmdConnect {
		rec.Decision, rec.Reason = "deny", "SOCKS command "+strconv.Itoa(int(req[1]))+" is not supported (CONNECT only)"
		b.record(rec)
		socksReply(c, socksCmdNotSupp)
		return
	}
	d := b.decide(ctx, host, port)
	rec.Host = d.host
	if !d.allowed {
		rec.Decision, rec.Reason = "deny", d.reason
		b.record(rec)
		socksReply(c, socksNotAllowed)
		return
	}
	if len(d.secrets) > 0 {
		if err := socksReply(c, socksSucceeded); err != nil {
			return
		}
		// TLS records start with 0x16 (handshake); anything else would be
		// plain text nobody may read the secret's responses through.
		if first, err := c.r.Peek(1); err != nil || first[0] != 0x16 {
			rec.Decision, rec.Reason = "deny", d.reason+"; only TLS is accepted to a host bound to secrets"
			b.record(rec)
			return
		}
		c.SetDeadline(time.Time{})
		b.interceptConn(ctx, c, d, "socks5")
		return
	}
	up, err := b.dialPinned(ctx, d)
	if err != nil {
		rec.Decision, rec.Reason, rec.Error = "allow", d.reason, err.Error()
		b.record(rec)
		socksReply(c, socksHostUnreach)
		return
	}
	defer up.Close()
	rec.Addr = up.RemoteAddr().String()
	if err := socksReply(c, socksSucceeded); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	var refused string
	rec.BytesOut, rec.BytesIn, refused = b.checkedPipe(c, up)
	rec.Decision, rec.Reason = "allow", d.reason+"; blind tunnel"
	if refused != "" {
		rec.Decision, rec.Reason = "deny", refused
	}
	b.record(rec)
}

// socksReply writes a reply with a zero IPv4 bound address.
func socksReply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{socksVersion, code, 0x00, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
