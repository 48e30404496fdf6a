package box

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/httpguard"
)

// DialBox opens a TCP connection to 127.0.0.1:port inside the box (the
// socket is created by the init in the box's network namespace).
func (b *Box) DialBox(ctx context.Context, port int) (net.Conn, error) {
	return b.dial(ctx, wire.Request{Op: wire.OpDial, Port: port}, fmt.Sprintf("port %d", port))
}

// DialUnix connects to the unix socket at the absolute path inside the
// box (the init connects it in the box's mount namespace) and returns
// the connection; execute_code reaches its script's RPC socket this way.
func (b *Box) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("box %s: dial %q: not an absolute path", b.task, path)
	}
	return b.dial(ctx, wire.Request{Op: wire.OpDial, Path: path}, "socket "+path)
}

// dial sends OpDial req (target names it in errors) and waits for the
// socket the init connected.
func (b *Box) dial(ctx context.Context, req wire.Request, target string) (net.Conn, error) {
	if b.Attached() {
		return b.dialAttached(ctx, req, target)
	}
	ch := make(chan net.Conn, 1)
	errc := make(chan error, 1)
	id := b.nextID.Add(1)
	b.mu.Lock()
	b.dials[id] = ch
	b.handlers[id] = func(r wire.Response) {
		if r.Kind == wire.KindError {
			errc <- fmt.Errorf("box %s: dial %s: %s", b.task, target, r.Err)
		}
	}
	b.mu.Unlock()
	cleanup := func() {
		b.mu.Lock()
		delete(b.dials, id)
		delete(b.handlers, id)
		b.mu.Unlock()
	}
	req.ID = id
	if err := b.fc.Send(req); err != nil {
		cleanup()
		return nil, ErrBoxStopped
	}
	select {
	case c := <-ch:
		return c, nil
	case err := <-errc:
		cleanup()
		return nil, err
	case <-b.died:
		cleanup()
		return nil, ErrBoxStopped
	case <-ctx.Done():
		cleanup()
		return nil, ctx.Err()
	}
}

// Publish forwards host address hostAddr (e.g. "127.0.0.1:8080"; port 0
// picks one) to 127.0.0.1:boxPort inside the box, like BoxLite's ports=.
// It returns the listening address; the listener closes with the box.
func (b *Box) Publish(hostAddr string, boxPort int) (net.Addr, error) {
	if boxPort <= 0 || boxPort > 65535 {
		return nil, fmt.Errorf("box port %d out of range 1-65535", boxPort)
	}
	ln, err := httpguard.Bind(hostAddr) // 0.0.0.0 binds IPv4, as for every hermes listener
	if err != nil {
		return nil, fmt.Errorf("publish %s → box port %d: %w", hostAddr, boxPort, err)
	}
	b.mu.Lock()
	b.listeners = append(b.listeners, ln)
	b.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bc, err := b.DialBox(b.ctx, boxPort)
				if err != nil {
					return
				}
				defer bc.Close()
				pipeConns(c, bc)
			}()
		}
	}()
	return ln.Addr(), nil
}

// pipeConns copies both ways until both directions end.
func pipeConns(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}
