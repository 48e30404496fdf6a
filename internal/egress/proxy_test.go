package egress

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/proxy"
)

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

func readAllString(r io.ReadCloser) string {
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

func helloHandler(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
}

func TestAllowedHostIsTunnelledBlind(t *testing.T) {
	r := newRig(t, rigOptions{allow: []string{"plain.test", "127.0.0.1/32"}, names: map[string]string{"plain.test": "127.0.0.1"}})
	port := r.upCA.upstream(t, http.HandlerFunc(helloHandler), "plain.test")

	// The client trusts only the upstream's CA: it must see the upstream
	// certificate, not one minted by the box CA.
	var issuer string
	c := r.client(r.upCA.pool)
	c.Transport.(*http.Transport).TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		issuer = cs.PeerCertificates[0].Issuer.CommonName
		return nil
	}
	resp, err := c.Get(fmt.Sprintf("https://plain.test:%d/x", port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAllString(resp.Body); body != fmt.Sprintf("hello plain.test:%d /x", port) {
		t.Fatalf("body %q", body)
	}
	if issuer != "upstream test CA" {
		t.Fatalf("client saw a certificate issued by %q, want the upstream's", issuer)
	}
	c.CloseIdleConnections()
	r.closeAndWait(t)
	recs, _ := r.audit(t)
	rec := findRecord(t, recs, "connect", "plain.test")
	if rec.Decision != "allow" || rec.Port != port || rec.BytesIn == 0 || rec.BytesOut == 0 || rec.Box != "task-1" || rec.Addr != hostPort("127.0.0.1", port) {
		t.Fatalf("audit record %+v", rec)
	}
}

func TestHostNotInAllowlistGets403(t *testing.T) {
	r := newRig(t, rigOptions{allow: []string{"plain.test", "127.0.0.1/32"}, names: map[string]string{"plain.test": "127.0.0.1", "other.test": "127.0.0.1"}})
	resp, body := r.rawConnect(t, "other.test:443")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "hermes egress allow other.test") || strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Fatalf("CONNECT other.test: %d %q", resp.StatusCode, body)
	}
	// Plain HTTP proxying is gated too.
	resp2, err := r.client(nil).Get("http://other.test/p?q=1")
	if err != nil {
		t.Fatal(err)
	}
	body = readAllString(resp2.Body)
	if resp2.StatusCode != http.StatusForbidden || !strings.Contains(body, "other.test is not in the allowlist") {
		t.Fatalf("GET other.test: %d %q", resp2.StatusCode, body)
	}
	if r.resolver.calls["other.test"] != 0 {
		t.Fatalf("an unlisted name was resolved %d times; it should be denied before any DNS lookup", r.resolver.calls["other.test"])
	}
	recs, raw := r.audit(t)
	rec := findRecord(t, recs, "http", "other.test")
	if rec.Decision != "deny" || rec.Path != "/p" || rec.Method != "GET" || strings.Contains(raw, "q=1") {
		t.Fatalf("audit %+v", rec)
	}
}

func TestReservedAddressLiteralsAreDenied(t *testing.T) {
	// Even "*" and 0.0.0.0/0 do not open reserved ranges.
	r := newRig(t, rigOptions{allow: []string{"*", "0.0.0.0/0", "::/0"}})
	for _, target := range []string{
		"127.0.0.1:80", "10.1.2.3:443", "172.16.0.1:443", "192.168.1.1:443", "100.64.0.1:443",
		"169.254.169.254:80", "0.0.0.0:80", "[::1]:80", "[fe80::1]:80", "[fd00::1]:80", "[::ffff:127.0.0.1]:80",
	} {
		resp, body := r.rawConnect(t, target)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "hermes egress allow") {
			t.Errorf("CONNECT %s: %d %q, want 403", target, resp.StatusCode, body)
		}
	}
	resp, body := r.rawConnect(t, "169.254.169.254:80")
	if !strings.Contains(body, "link-local/metadata") {
		t.Errorf("metadata denial does not say why: %d %q", resp.StatusCode, body)
	}
}

func TestNameResolvingToLoopbackIsDeniedUnlessLoopbackListed(t *testing.T) {
	names := map[string]string{"good.test": "127.0.0.1"}
	for _, tc := range []struct {
		allow []string
		want  int
	}{
		{[]string{"good.test"}, http.StatusForbidden},
		{[]string{"good.test", "*"}, http.StatusForbidden},
		{[]string{"good.test", "0.0.0.0/0"}, http.StatusForbidden},
		{[]string{"good.test", "127.0.0.1/32"}, http.StatusOK},
		{[]string{"127.0.0.0/8"}, http.StatusForbidden}, // a CIDR never admits a name by itself
	} {
		r := newRig(t, rigOptions{allow: tc.allow, names: names})
		port := r.upCA.upstream(t, http.HandlerFunc(helloHandler), "good.test")
		resp, body := r.rawConnect(t, hostPort("good.test", port))
		if resp.StatusCode != tc.want {
			t.Errorf("allow %v: CONNECT good.test → %d %q, want %d", tc.allow, resp.StatusCode, body, tc.want)
		}
		if tc.want == http.StatusForbidden && !strings.Contains(body, "loopback") && !strings.Contains(body, "not in the allowlist") {
			t.Errorf("allow %v: denial does not name the loopback address: %q", tc.allow, body)
		}
	}
}

func TestDenyWinsOverAllow(t *testing.T) {
	r := newRig(t, rigOptions{allow: []string{"*.corp.test", "127.0.0.1/32"}, deny: []string{"admin.corp.test", "127.0.0.2"},
		names: map[string]string{"admin.corp.test": "127.0.0.1", "www.corp.test": "127.0.0.2"}})
	resp, body := r.rawConnect(t, "admin.corp.test:443")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "denied by the entry admin.corp.test") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	resp, body = r.rawConnect(t, "www.corp.test:443")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "127.0.0.2") {
		t.Fatalf("www.corp.test resolving to a denied address: %d %q", resp.StatusCode, body)
	}
}

func TestDialedAddressIsPinnedToTheCheckedResolution(t *testing.T) {
	r := newRig(t, rigOptions{allow: []string{"pin.test", "127.0.0.1/32"}, names: map[string]string{"pin.test": "127.0.0.1"}})
	port := r.upCA.upstream(t, http.HandlerFunc(helloHandler), "pin.test")
	resp, err := r.client(r.upCA.pool).Get(fmt.Sprintf("https://pin.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	readAllString(resp.Body)
	if n := r.resolver.calls["pin.test"]; n != 1 {
		t.Fatalf("pin.test resolved %d times for one connection, want exactly 1", n)
	}
}

func TestSOCKS5ConnectAllowedAndDenied(t *testing.T) {
	r := newRig(t, rigOptions{allow: []string{"plain.test", "127.0.0.1/32"}, names: map[string]string{"plain.test": "127.0.0.1", "other.test": "127.0.0.1"}})
	port := r.upCA.upstream(t, http.HandlerFunc(helloHandler), "plain.test")

	dialer, err := proxy.SOCKS5("tcp", r.proxyAddr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{
		DialContext:     dialer.(proxy.ContextDialer).DialContext,
		TLSClientConfig: &tls.Config{RootCAs: r.upCA.pool},
	}}
	resp, err := c.Get(fmt.Sprintf("https://plain.test:%d/s", port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAllString(resp.Body); !strings.HasPrefix(body, "hello plain.test") {
		t.Fatalf("body %q", body)
	}

	for _, target := range []struct {
		atyp byte
		addr []byte
	}{
		{socksAtypDomain, append([]byte{byte(len("other.test"))}, "other.test"...)},
		{socksAtypIPv4, []byte{169, 254, 169, 254}},
	} {
		if code := socksConnectRaw(t, r.proxyAddr, target.atyp, target.addr, 443); code != socksNotAllowed {
			t.Errorf("SOCKS CONNECT %v: reply %#x, want 0x02 (not allowed by ruleset)", target.addr, code)
		}
	}
	c.CloseIdleConnections()
	r.closeAndWait(t)
	recs, _ := r.audit(t)
	if rec := findRecord(t, recs, "socks5", "other.test"); rec.Decision != "deny" {
		t.Fatalf("%+v", rec)
	}
	if rec := findRecord(t, recs, "socks5", "plain.test"); rec.Decision != "allow" || rec.BytesIn == 0 {
		t.Fatalf("%+v", rec)
	}
}

// socksConnectRaw does a SOCKS5 handshake by hand and returns the reply code.
func socksConnectRaw(t *testing.T, proxyAddr string, atyp byte, addr []byte, port uint16) byte {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 0})
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil || sel != [2]byte{5, 0} {
		t.Fatalf("method selection %v %v", sel, err)
	}
	req := append([]byte{5, 1, 0, atyp}, addr...)
	req = binary.BigEndian.AppendUint16(req, port)
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatal(err)
	}
	return rep[1]
}

func findRecord(t *testing.T, recs []AuditRecord, proto, host string) AuditRecord {
	t.Helper()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Proto == proto && recs[i].Host == host {
			return recs[i]
		}
	}
	t.Fatalf("no %s audit record for %s in %+v", proto, host, recs)
	return AuditRecord{}
}

// closeAndWait stops the rig's proxy and waits for its connections to end,
// so that their audit records are written.
func (r *rig) closeAndWait(t *testing.T) {
	t.Helper()
	// The cleanup registered by newRig is idempotent; run it now.
	r.stop()
}

func TestEntriesWithAPortOpenOnlyThatPort(t *testing.T) {
	upCA := newTestCA(t)
	port := upCA.upstream(t, http.HandlerFunc(helloHandler), "svc.test")
	r := newRig(t, rigOptions{
		allow: []string{hostPort("svc.test", port), hostPort("127.0.0.1", port)},
		names: map[string]string{"svc.test": "127.0.0.1"},
	})
	resp, err := r.client(upCA.pool).Get(fmt.Sprintf("https://svc.test:%d/p", port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAllString(resp.Body); resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "hello svc.test") {
		t.Fatalf("svc.test:%d: %d %q", port, resp.StatusCode, body)
	}
	if resp, body := r.rawConnect(t, hostPort("127.0.0.1", port)); resp.StatusCode != http.StatusOK {
		t.Fatalf("127.0.0.1:%d listed but refused: %q", port, body)
	}
	other := port + 1
	if other > 65535 {
		other = port - 1
	}
	resp2, body := r.rawConnect(t, hostPort("svc.test", other))
	if resp2.StatusCode != http.StatusForbidden || !strings.Contains(body, fmt.Sprintf("not on port %d", other)) ||
		!strings.Contains(body, fmt.Sprintf("hermes egress allow svc.test:%d", other)) {
		t.Fatalf("svc.test on another port: %d %q", resp2.StatusCode, body)
	}
	if resp2, body := r.rawConnect(t, hostPort("127.0.0.1", other)); resp2.StatusCode != http.StatusForbidden {
		t.Fatalf("127.0.0.1 on another port: %d %q", resp2.StatusCode, body)
	}
}
