package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// A response from a host bound to secrets is redacted only when the gate
// knows the connection goes to that host, which it knows from the name the
// box asked for. Two ways around that are refused here: asking for one of
// the host's addresses instead of its name (CONNECT 140.82.112.6:443,
// SOCKS5 with an IPv4 address, http://ADDR/), and a blind tunnel to some
// other allowed name whose TLS ClientHello names the secret host (SNI),
// which a shared front end would route to it. What stays open (a Host
// header inside TLS without SNI, on a front end shared with an allowed
// host; a wildcard secret host's addresses) is documented in the README:
// the allowlist is the boundary.

// secretHostAt returns a host name bound to one of the box's secrets that
// resolves to one of addrs ("" when none does; addresses compared in their
// canonical form, so ::ffff:a.b.c.d and NAT64 forms count). Wildcard hosts
// cannot be resolved and are not looked at. It resolves each such host on
// every call, so it is only called for boxes that hold secrets.
func (b *box) secretHostAt(ctx context.Context, addrs ...netip.Addr) string {
	want := map[netip.Addr]bool{}
	for _, a := range addrs {
		want[canonicalAddr(a)] = true
	}
	seen := map[string]bool{}
	for _, s := range b.secrets {
		for _, r := range s.hosts {
			if r.Kind != RuleHost || seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			rctx, cancel := context.WithTimeout(ctx, b.gate.opts.DialTimeout)
			found, _ := b.gate.opts.Resolver.LookupNetIP(rctx, "ip", r.Name)
			cancel()
			for _, x := range found {
				if want[canonicalAddr(x)] {
					return r.Name
				}
			}
		}
	}
	return ""
}

// secretBound reports whether host is bound to one of the box's secrets.
func (b *box) secretBound(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, s := range b.secrets {
		if s.boundTo(host) {
			return true
		}
	}
	return false
}

// maxTLSRecord is the largest TLS plaintext record (RFC 8446 §5.1) plus
// its 5-byte header.
const maxTLSRecord = 5 + 1<<14

// frontedSecretHost reads (without consuming) the first bytes the box sends
// into a blind tunnel and returns the server name of its TLS ClientHello
// when that name is bound to a secret, "" otherwise (not TLS, no SNI, or
// another name). It blocks until the box sends its first byte.
func (b *box) frontedSecretHost(br *bufio.Reader) string {
	if len(b.secrets) == 0 {
		return ""
	}
	hdr, err := br.Peek(5)
	if err != nil || hdr[0] != 0x16 {
		return ""
	}
	n := int(binary.BigEndian.Uint16(hdr[3:5]))
	rec, err := br.Peek(5 + n)
	if err != nil {
		// Not a whole record: a ClientHello the gate cannot read is not
		// let through to what might be a secret host.
		return "(unreadable TLS ClientHello)"
	}
	if h := rec[5:]; len(h) < 4 || h[0] != 1 || 4+(int(h[1])<<16|int(h[2])<<8|int(h[3])) > len(h) {
		// A ClientHello split over several records could carry its
		// server name past what one record shows; browsers and TLS
		// libraries send it whole.
		return "(a TLS ClientHello split across records)"
	}
	name := clientHelloServerName(rec[5:])
	if name != "" && b.secretBound(name) {
		return name
	}
	return ""
}

// clientHelloServerName is the server_name (RFC 6066 §3) of the handshake
// message h when h is a ClientHello, "" otherwise.
func clientHelloServerName(h []byte) string {
	if len(h) < 4 || h[0] != 1 {
		return ""
	}
	p := h[4:]
	skip := func(n int) bool {
		if n > len(p) {
			p = nil
			return false
		}
		p = p[n:]
		return true
	}
	vec := func(lenBytes int) bool {
		if len(p) < lenBytes {
			return false
		}
		n := 0
		for _, c := range p[:lenBytes] {
			n = n<<8 | int(c)
		}
		return skip(lenBytes) && skip(n)
	}
	if !skip(2+32) || !vec(1) || !vec(2) || !vec(1) || len(p) < 2 {
		return ""
	}
	ext := p[2:min(len(p), 2+int(binary.BigEndian.Uint16(p)))]
	for len(ext) >= 4 {
		typ, l := binary.BigEndian.Uint16(ext), int(binary.BigEndian.Uint16(ext[2:]))
		if 4+l > len(ext) {
			return ""
		}
		body := ext[4 : 4+l]
		ext = ext[4+l:]
		if typ != 0 || len(body) < 5 || body[2] != 0 {
			continue
		}
		nl := int(binary.BigEndian.Uint16(body[3:]))
		if 5+nl <= len(body) {
			return string(body[5 : 5+nl])
		}
	}
	return ""
}

// checkedPipe is pipe for a blind tunnel: upstream's bytes flow at once
// (protocols where the server speaks first work), the box's only after
// frontedSecretHost found no secret host in them. A refused tunnel is
// closed and the reason returned.
func (b *box) checkedPipe(client *bufferedConn, up net.Conn) (out, in int64, refused string) {
	client.r = bufio.NewReaderSize(client.r, maxTLSRecord)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if name := b.frontedSecretHost(client.r); name != "" {
			refused = "the TLS ClientHello names " + name + ", which is bound to secrets: connect to it by name"
			client.Close()
			up.Close()
			return
		}
		out, _ = io.Copy(up, client)
		closeWrite(up)
	}()
	in, _ = io.Copy(client, up)
	closeWrite(client)
	wg.Wait()
	return out, in, refused
}
