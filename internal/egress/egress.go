// Package egress is the host-side network gate of the box: an HTTP(S) and
// SOCKS5 proxy that enforces an allowlist of hosts, *.suffix patterns and
// CIDRs, resolves DNS on the host and pins the dialed address, and swaps
// secret placeholders for real values on requests to each secret's hosts
// (TLS interception with a per-box CA). See ../shared/reference/sandbox.md §D3.
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
