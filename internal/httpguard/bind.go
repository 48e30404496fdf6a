package httpguard

import (
	"net"
	"net/netip"
)

// Bind listens on TCP address addr ("host:port"; port 0 picks one). An
// IPv4 literal, 0.0.0.0 included, binds IPv4 only ("tcp4"): Go's "tcp"
// makes 0.0.0.0 a dual-stack socket that shows only in /proc/net/tcp6,
// where scripts polling /proc/net/tcp for the port (BoxLite's examples) do
// not find it. "::" (and an empty host) binds dual-stack, an IPv6 literal
// IPv6, and a name whatever it resolves to, as net.Listen("tcp") does.
// Every listener hermes opens binds through Bind.
func Bind(addr string) (net.Listener, error) {
	return net.Listen(Network(addr), addr)
}

// Network is the network Bind listens on for addr: "tcp4" when addr's
// host is an IPv4 literal, else "tcp".
func Network(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp"
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return "tcp4"
	}
	return "tcp"
}
