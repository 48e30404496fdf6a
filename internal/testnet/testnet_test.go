package testnet

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// The address is loopback, nothing listens on it, and a server can take it.
func TestFreeAddrCanBeServedAndIsNotListening(t *testing.T) {
	addr := FreeAddr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("FreeAddr = %q", addr)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("something listens on %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	port := FreePort(t)
	if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err != nil || port <= 0 {
		t.Fatalf("FreePort = %d: %v", port, err)
	} else {
		ln.Close()
	}
}
