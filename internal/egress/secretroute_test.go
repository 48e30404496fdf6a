package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// tunnelGet opens a blind tunnel to authority through the gate (CONNECT),
// speaks TLS with serverName inside (the upstream's CA trusted, as a box
// that brings its own trust would) and returns what GET / answered.
func tunnelGet(t *testing.T, r *rig, authority, serverName string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, " 200 ") {
		rest, _ := io.ReadAll(br)
		return "", fmt.Errorf("CONNECT: %q %s", line, rest)
	}
	for l := ""; l != "\r\n"; {
		if l, err = br.ReadString('\n'); err != nil {
			return "", err
		}
	}
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{ServerName: serverName, RootCAs: r.upCA.pool})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: api.secret.test\r\nConnection: close\r\n\r\n")
	out, err := io.ReadAll(tc)
	return string(out), err
}

// A response of a secret's host is redacted only when the gate knows the
// connection goes there: reaching it by one of its addresses, or through a
// blind tunnel to another allowed name whose ClientHello names it, is
// refused.
func TestSecretHostCannotBeReachedByAddressOrFrontedThroughAnotherName(t *testing.T) {
	r, _, port, _ := secretRig(t)
	if out, err := tunnelGet(t, r, hostPort("127.0.0.1", port), "api.secret.test"); err == nil || strings.Contains(out, "200 OK") {
		t.Fatalf("CONNECT to the secret host's address was let through: %v\n%s", err, out)
	} else if !strings.Contains(err.Error(), "bound to secrets") {
		t.Fatalf("CONNECT to the address: %v", err)
	}
	if out, _ := tunnelGet(t, r, hostPort("plain.test", port), "api.secret.test"); strings.Contains(out, "200 OK") {
		t.Fatalf("a blind tunnel whose ClientHello names the secret host was let through:\n%s", out)
	}
	if out, err := tunnelGet(t, r, hostPort("plain.test", port), "plain.test"); err != nil || !strings.Contains(out, "200 OK") {
		t.Fatalf("a blind tunnel to an allowed host no longer works: %v\n%s", err, out)
	}
	_, raw := r.audit(t)
	if !strings.Contains(raw, "ClientHello names api.secret.test") {
		t.Fatalf("the refused tunnel is not in the audit log:\n%s", raw)
	}
}

func TestClientHelloServerNameOfARealHello(t *testing.T) {
	for _, name := range []string{"api.secret.test", ""} {
		a, b := net.Pipe()
		go tls.Client(a, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
		br := bufio.NewReaderSize(b, maxTLSRecord)
		hdr, err := br.Peek(5)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := br.Peek(5 + int(hdr[3])<<8 + int(hdr[4]))
		if err != nil {
			t.Fatal(err)
		}
		if got := clientHelloServerName(rec[5:]); got != name {
			t.Errorf("server name %q, want %q", got, name)
		}
		a.Close()
		b.Close()
	}
}

// splitHelloConn writes the first TLS record (the ClientHello) as two
// records of the same type, as a client hiding its server name from a
// one-record parser would.
type splitHelloConn struct {
	net.Conn
	done bool
}

func (c *splitHelloConn) Write(p []byte) (int, error) {
	if c.done || len(p) < 5+64 || p[0] != 0x16 {
		return c.Conn.Write(p)
	}
	c.done = true
	n := int(p[3])<<8 | int(p[4])
	body := p[5 : 5+n]
	var out []byte
	for _, part := range [][]byte{body[:40], body[40:]} {
		out = append(out, 0x16, p[1], p[2], byte(len(part)>>8), byte(len(part)))
		out = append(out, part...)
	}
	out = append(out, p[5+n:]...)
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func TestClientHelloSplitAcrossRecordsIsRefusedInABlindTunnel(t *testing.T) {
	r, _, port, _ := secretRig(t)
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostPort("plain.test", port), hostPort("plain.test", port))
	br := bufio.NewReader(c)
	for l := ""; l != "\r\n"; {
		if l, err = br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	tc := tls.Client(&splitHelloConn{Conn: &bufferedConn{Conn: c, r: br}}, &tls.Config{ServerName: "api.secret.test", RootCAs: r.upCA.pool})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: api.secret.test\r\nConnection: close\r\n\r\n")
	if out, _ := io.ReadAll(tc); strings.Contains(string(out), "200 OK") {
		t.Fatalf("a ClientHello split in two records reached the secret host:\n%s", out)
	}
}
