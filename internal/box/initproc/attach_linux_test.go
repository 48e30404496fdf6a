package initproc

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box/wire"
	"golang.org/x/sys/unix"
)

// A HERMES_HOME deep enough that the socket path passes sun_path's 108
// bytes still works: bind and connect go through /proc/self/fd.
func TestAttachSocketLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, wire.AttachSocketName)
	ln, err := listenAttach(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v %v, want a 0600 socket", path, st.Mode(), err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := dialAttachSocket(path)
	if err != nil {
		t.Fatalf("dial %d-byte path: %v", len(path), err)
	}
	c.Close()
}

// The init serves no attached connection before the host has moved it
// into the box's cgroup and said so (wire.OpJoined): a command an attaching
// process sent earlier would run outside the group, free of its limits.
func TestAttachServedOnlyAfterHostJoinedCgroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), wire.AttachSocketName)
	ln, err := listenAttach(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	host, init := net.Pipe()
	defer host.Close()
	defer init.Close()
	srv, err := newInitServer(wire.NewConn(init), nil, &wire.InitSpec{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(srv.devNull)
	srv.attachLn = ln
	c, err := dialAttachSocket(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fc := wire.NewConn(c)
	if err := fc.Send(wire.Request{Op: wire.OpAttach, Version: wire.Version}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var r wire.Response
	if err := fc.Receive(&r); err == nil {
		t.Fatalf("attached before opJoined: %+v", r)
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
	// A fresh connection after the join is served.
	srv.handle(srv.main, wire.Request{Op: wire.OpJoined})
	c2, err := dialAttachSocket(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fc2 := wire.NewConn(c2)
	c2.SetDeadline(time.Now().Add(20 * time.Second))
	if err := fc2.Send(wire.Request{Op: wire.OpAttach, Version: wire.Version}); err != nil {
		t.Fatal(err)
	}
	if err := fc2.Receive(&r); err != nil || r.Kind != wire.KindReady {
		t.Fatalf("after opJoined: %+v %v, want ready", r, err)
	}
}

// dialAttachSocket connects to the attach socket at path as the host's
// client does (internal/box): through ShortSocketPath, so that a path
// longer than sun_path still works.
func dialAttachSocket(path string) (*net.UnixConn, error) {
	addr, done, err := ShortSocketPath(path, false)
	if err != nil {
		return nil, err
	}
	defer done()
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: addr, Net: "unix"})
}
