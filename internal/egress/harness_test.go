package egress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a map and counts lookups per name.
type fakeResolver struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr
	calls map[string]int
}

func newFakeResolver(m map[string]string) *fakeResolver {
	r := &fakeResolver{addrs: map[string][]netip.Addr{}, calls: map[string]int{}}
	for name, a := range m {
		r.addrs[name] = []netip.Addr{netip.MustParseAddr(a)}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[host]++
	a, ok := r.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), a...), nil
}

// testCA is a throwaway CA for fake upstreams.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(), Subject: pkix.Name{CommonName: "upstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) leaf(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// upstream is a fake HTTPS server on 127.0.0.1 with a cert for names.
func (ca *testCA) upstream(t testing.TB, h http.Handler, names ...string) (port int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf(t, names...)}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// rig is a gate + one box session served on a loopback listener, standing
// in for the in-box relay.
type rig struct {
	home      string
	resolver  *fakeResolver
	session   *BoxSession
	proxyAddr string
	upCA      *testCA
	// stop closes the listener and waits for served connections (idempotent).
	stop func()
}

type rigOptions struct {
	allow, deny []string
	secrets     []Secret
	names       map[string]string // resolver entries
	// caFile passes the upstream CA as Options.CAFile (a PEM file) instead
	// of Options.RootCAs.
	caFile bool
	limits Limits      // Options.Limits
	audit  AuditLimits // Options.Audit
}

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{home: t.TempDir(), resolver: newFakeResolver(o.names), upCA: newTestCA(t)}
	opts := Options{Home: r.home, Allow: o.allow, Deny: o.deny, Secrets: o.secrets,
		Resolver: r.resolver, RootCAs: r.upCA.pool, Limits: o.limits, Audit: o.audit}
	if o.caFile {
		opts.RootCAs = nil
		opts.CAFile = "upstream-ca.pem" // relative to Home
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.upCA.cert.Raw})
		if err := os.WriteFile(filepath.Join(r.home, opts.CAFile), pemBytes, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.session, err = g.NewBox("task-1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var closed atomic.Bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); r.session.ServeConn(ctx, c) }()
		}
	}()
	r.stop = func() {
		if closed.Swap(true) {
			return
		}
		ln.Close()
		cancel()
		wg.Wait()
		r.session.Close()
	}
	t.Cleanup(r.stop)
	r.proxyAddr = ln.Addr().String()
	return r
}

// client returns an HTTP client that uses the rig as its proxy and trusts
// roots.
func (r *rig) client(roots *x509.CertPool) *http.Client {
	pu, _ := url.Parse("http://" + r.proxyAddr)
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}, Timeout: 20 * time.Second}
}

// boxRoots is the trust store of a box: the box CA only.
func (r *rig) boxRoots(t testing.TB) *x509.CertPool {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(r.session.CACertPEM) {
		t.Fatal("CACertPEM does not parse")
	}
	return p
}

// rawConnect sends CONNECT host:port and returns the response.
func (r *rig) rawConnect(t testing.TB, authority string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", r.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	resp, err := http.ReadResponse(bufioReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, "" // the tunnel is open; there is no body to read
	}
	return resp, readAllString(resp.Body)
}

func (r *rig) audit(t testing.TB) ([]AuditRecord, string) {
	t.Helper()
	recs, err := ReadAudit(AuditPath(r.home), 1000)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(r.home, "logs", "egress.jsonl"))
	return recs, string(raw)
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func strconvItoa(i int) string { return strconv.Itoa(i) }

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func htmlUnescape(s string) string { return html.UnescapeString(s) }
