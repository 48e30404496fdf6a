// Package egress is the host-side network gate of the box: an HTTP(S) and
// SOCKS5 proxy that enforces an allowlist of hosts, *.suffix patterns and
// CIDRs, resolves DNS on the host and pins the dialed address, and swaps
// secret placeholders for real values on requests to each secret's hosts
// (TLS interception with a per-box CA). See ../shared/reference/sandbox.md §D3.
//
// Reserved destinations: loopback, private, CGNAT, link-local/metadata,
// ULA and multicast ranges, and every address of the host's own interfaces
// (a service bound to 0.0.0.0 or :: on the host answers there too), are
// refused unless an IP or CIDR entry inside them is listed; for a host
// interface address only that exact IP opens it. IPv4 written as IPv6
// (::ffff:a.b.c.d, ::a.b.c.d, NAT64 64:ff9b::a.b.c.d) is judged as the
// IPv4 it embeds. Entries may carry a port ("api.example.com:443",
// "[::1]:8080", "10.0.0.0/8:5432") to cover that port only.
//
// Secrets on intercepted hosts: placeholders are replaced in the path,
// query, headers (inside Basic credentials too: decoded, replaced, encoded
// again) and body of requests to the secret's hosts. A compressed request
// body (Content-Encoding other than identity) is left untouched: a
// placeholder inside it stays a placeholder.
//
// Every response from a secret's host reaches the box through one pipeline
// (reverseProxy), whichever way the request came: CONNECT, SOCKS5 (secret
// hosts are intercepted there too; plain text to them is refused) or an
// absolute-URI proxy request (http:// or https://). It strips Range and
// If-Range from the request, decodes every content coding of the response
// (all Content-Encoding lines; gzip, deflate; anything else is refused
// with 502) and redacts every secret value of the box back to its
// placeholder in the status header block, 1xx informational responses,
// trailers, header names and the body; error text (502 bodies, audit
// fields) is redacted the same way. Matching runs on a normalised view
// (see redactor): any case, NUL bytes dropped (UTF-16LE/BE), one level of
// percent-encoding (either case), JSON/JS escapes (\/, \uXXXX, \xHH) and
// HTML character references decoded; it catches any fragment of 8 or more
// characters of a secret, and its base64 (standard and URL alphabets,
// padded or not, also inside a larger base64 string) and hex forms. A
// secret that shares 8-character runs with ordinary text (a dictionary
// word) has those runs redacted wherever they appear in its hosts'
// responses.
//
// Limit: redaction is a last line, not the boundary; the allowlist is. A
// box that can make an upstream store a secret and serve it back through
// something the gate does not see or cannot read (pieces of fewer than 8
// characters, two levels of escaping, reversed, encrypted, inside an
// archive or image, another host or channel such as an email or a webhook
// the host sends on) can still learn it. Scope secrets to hosts that do
// not echo what they receive (API endpoints, not paste bins, issue
// trackers the box can read back, or debug echo services).
//
// Host resources: the gate runs in the host process, outside the box's
// cgroup, so each box gets Limits derived from its container_memory
// (connections at once, request-body bytes buffered for substitution,
// header size, TLS/SOCKS handshake, header and body-stall deadlines), and
// the audit log is bounded (AuditLimits: fields truncated, identical lines
// rate-limited per box, rotated by size).
//
// CONTRACT with internal/box (do not change these signatures without
// telling the lead): the box calls NewBox once per box, puts
// BoxSession.Env into the box's environment, writes BoxSession.CACertPEM to
// CACertPath inside the box and appends it to the box trust store, and
// serves every connection that the box's in-box relay (127.0.0.1:3128
// inside the box) forwards by calling BoxSession.ServeConn.
package egress

import (
	"context"
	"net"
)

// ProxyPort is the loopback port inside the box where the in-box relay
// listens; HTTP_PROXY and friends point at it.
const ProxyPort = 3128

// CACertPath is where the box's CA certificate is written inside the box.
const CACertPath = "/etc/hermes/box-ca.crt"

// BoxSession is the egress state of one box.
type BoxSession struct {
	// Env holds the variables to set inside the box: HTTP_PROXY, HTTPS_PROXY,
	// ALL_PROXY (lower-case too), NO_PROXY, the CA bundle variables
	// (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE,
	// CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT) and one placeholder per secret.
	Env map[string]string
	// CACertPEM is the per-box CA certificate (PEM), never its key.
	CACertPEM []byte

	serve func(ctx context.Context, c net.Conn)
	close func() error
}

// ServeConn handles one connection relayed from inside the box (HTTP proxy
// requests, CONNECT, or SOCKS5, detected from the first bytes) and closes it.
func (s *BoxSession) ServeConn(ctx context.Context, c net.Conn) {
	if s == nil || s.serve == nil {
		c.Close()
		return
	}
	s.serve(ctx, c)
}

// Close releases the session (per-box CA, audit log handle).
func (s *BoxSession) Close() error {
	if s == nil || s.close == nil {
		return nil
	}
	return s.close()
}
