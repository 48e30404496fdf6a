// Package testnet gives tests loopback addresses to serve on. It is
// imported only by tests.
package testnet

import (
	"net"
	"testing"
)

// FreeAddr returns "127.0.0.1:PORT" for a TCP port that was free a moment
// ago and has nothing listening on it now: for a server the test starts
// by address (a child process, a daemon flag), or for a dial that must be
// refused. Another process may take the port in between; tests that can
// pass a listener should do that instead.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// FreePort is FreeAddr's port number.
func FreePort(t testing.TB) int {
	t.Helper()
	ap, err := net.ResolveTCPAddr("tcp", FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return ap.Port
}
