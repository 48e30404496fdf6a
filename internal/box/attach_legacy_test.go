package box

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// A box whose init an older hermes started (protocol 1: gob frames on
// attach.sock) is named as such, not taken for a stopped box: a hermes
// that took it for stopped would wait for the state lock the running
// owner holds.
func TestAttachToAnOlderInitSaysSo(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "boxes", "old")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, wire.LegacyAttachSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go hangUpEach(ln)
	_, err = Attach(context.Background(), home, "old")
	if !errors.Is(err, errProtocol) || !strings.Contains(err.Error(), "protocol 1 or older") {
		t.Fatalf("attach to an older init: %v, want the protocol named", err)
	}
	ln.Close()
	if _, err := Attach(context.Background(), home, "old"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("once the older init is gone: %v, want ErrNotRunning", err)
	}
}

// hangUpEach accepts connections on ln and closes each at once, until ln
// is closed: an init that ends every attach before its hello.
func hangUpEach(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
