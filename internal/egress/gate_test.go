package egress

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewBoxEnvironment(t *testing.T) {
	home := t.TempDir()
	if err := SetSecret(home, Secret{Name: "GH_TOKEN", Value: "ghp_realvalue", Hosts: []string{"api.github.com"}}); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Home: home, Allow: []string{"pypi.org"}})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := g.NewBox("t1")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := g.NewBox("t2")
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
		if s1.Env[k] != "http://127.0.0.1:3128" {
			t.Errorf("%s=%q", k, s1.Env[k])
		}
	}
	if !strings.HasSuffix(proxyURL, ":"+strconvItoa(ProxyPort)) {
		t.Errorf("proxyURL %s does not use ProxyPort", proxyURL)
	}
	for k, want := range map[string]string{
		"NO_PROXY": "localhost,127.0.0.1,::1", "SSL_CERT_FILE": TrustBundlePath, "REQUESTS_CA_BUNDLE": TrustBundlePath,
		"CURL_CA_BUNDLE": TrustBundlePath, "GIT_SSL_CAINFO": TrustBundlePath, "NODE_EXTRA_CA_CERTS": CACertPath,
	} {
		if s1.Env[k] != want {
			t.Errorf("%s=%q, want %q", k, s1.Env[k], want)
		}
	}
	if !strings.HasPrefix(s1.Env["GH_TOKEN"], "hermes-secret-GH_TOKEN-") || s1.Env["GH_TOKEN"] == s2.Env["GH_TOKEN"] {
		t.Errorf("placeholders must be fresh per box: %q %q", s1.Env["GH_TOKEN"], s2.Env["GH_TOKEN"])
	}
	for k, v := range s1.Env {
		if strings.Contains(v, "ghp_realvalue") {
			t.Errorf("the real value is in the box env as %s", k)
		}
	}
	if strings.Contains(string(s1.CACertPEM), "PRIVATE") {
		t.Error("CACertPEM holds a private key")
	}
}

func TestBoxCAIsNameConstrainedToSecretHosts(t *testing.T) {
	now := time.Now()
	ca, err := newCertAuthority(func() time.Time { return now }, []string{"api.github.com"})
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(ca.certPEM)
	root, err := x509.ParseCertificate(blk.Bytes)
	if err != nil || !root.IsCA || root.NotAfter.Sub(now) > 8*24*time.Hour {
		t.Fatalf("CA %v %v", root, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(root)
	for host, ok := range map[string]bool{"api.github.com": true, "example.com": false} {
		leaf, err := ca.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		_, err = leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now})
		if (err == nil) != ok {
			t.Errorf("leaf for %s verifies=%v (%v), want %v", host, err == nil, err, ok)
		}
	}
	again, _ := ca.leaf("api.github.com")
	first, _ := ca.leaf("api.github.com")
	if again != first {
		t.Error("leaf certificates are not cached")
	}
}

func TestSecretsStoreRoundTrip(t *testing.T) {
	home := t.TempDir()
	if err := SetSecret(home, Secret{Name: "A_KEY", Value: "v1", Hosts: []string{"a.test"}}); err != nil {
		t.Fatal(err)
	}
	if err := SetSecret(home, Secret{Name: "A_KEY", Value: "v2", Hosts: []string{"a.test", "*.b.test"}}); err != nil {
		t.Fatal(err)
	}
	if err := SetSecret(home, Secret{Name: "B", Value: "w", Hosts: []string{"b.test"}}); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSecrets(home)
	if err != nil || len(got) != 2 || got[0].Name != "A_KEY" || got[0].Value != "v2" || len(got[0].Hosts) != 2 {
		t.Fatalf("%#v %v", got, err)
	}
	st, _ := os.Stat(SecretsPath(home))
	dst, _ := os.Stat(filepath.Dir(SecretsPath(home)))
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Fatalf("modes %o %o", st.Mode().Perm(), dst.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(SecretsPath(home)))
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
	if err := RemoveSecret(home, "A_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveSecret(home, "A_KEY"); err == nil || !strings.Contains(err.Error(), "secrets list") {
		t.Fatalf("removing a missing secret: %v", err)
	}
	for _, bad := range []Secret{
		{Name: "1ABC", Value: "v", Hosts: []string{"a.test"}},
		{Name: "HTTPS_PROXY", Value: "v", Hosts: []string{"a.test"}},
		{Name: "OK", Value: "", Hosts: []string{"a.test"}},
		{Name: "OK", Value: "v"},
		{Name: "OK", Value: "v", Hosts: []string{"10.0.0.0/8"}},
	} {
		if err := SetSecret(home, bad); err == nil {
			t.Errorf("accepted %#v", bad)
		}
	}
	if got, _ := LoadSecrets(home); len(got) != 1 || got[0].Name != "B" {
		t.Fatalf("bad input changed the store: %#v", got)
	}
	// A store other users can read is refused rather than used.
	os.Chmod(SecretsPath(home), 0o644)
	if _, err := LoadSecrets(home); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("group-readable store: %v", err)
	}
}

func TestSecretFormattingHidesTheValue(t *testing.T) {
	s := Secret{Name: "K", Value: "topsecret", Hosts: []string{"a.test"}}
	for _, out := range []string{s.String(), s.GoString(), sprintf("%v %+v %#v %s", s, s, s, s)} {
		if strings.Contains(out, "topsecret") {
			t.Fatalf("value printed: %s", out)
		}
	}
}

func TestGateReservesTheHostsInterfaceAddresses(t *testing.T) {
	// A fake interface-address source: these addresses are never dialed,
	// only decided on.
	hostAddrs := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("192.0.2.10"), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("2001:db8::10"), Mask: net.CIDRMask(64, 128)},
			&net.IPAddr{IP: net.ParseIP("198.51.100.7")},
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		}, nil
	}
	resolver := newFakeResolver(map[string]string{"svc.test": "2001:db8::10", "pub.test": "192.0.2.11"})
	g, err := New(Options{Home: t.TempDir(), Allow: []string{"*", "0.0.0.0/0", "::/0", "192.0.2.0/24"},
		InterfaceAddrs: hostAddrs, Resolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	b := &box{gate: g}
	ctx := context.Background()
	for _, host := range []string{"192.0.2.10", "[2001:db8::10]", "198.51.100.7", "::ffff:192.0.2.10", "64:ff9b::c000:20a", "svc.test"} {
		d := b.decide(ctx, host, 8080)
		if d.allowed {
			t.Errorf("%s (the host's own address) allowed under \"*\": %s", host, d.reason)
			continue
		}
		if !strings.Contains(d.reason, "this host's own interface") || !strings.Contains(d.hint, "hermes egress allow") {
			t.Errorf("%s: denial %q does not say why and how to allow", host, d.denyLine())
		}
	}
	if d := b.decide(ctx, "192.0.2.10", 8080); !strings.Contains(d.hint, "hermes egress allow 192.0.2.10:8080") {
		t.Errorf("hint %q does not offer the narrowest entry", d.hint)
	}
	if d := b.decide(ctx, "pub.test", 443); !d.allowed {
		t.Errorf("a neighbour of the host was denied: %s", d.reason)
	}

	// Listing the exact IP (and port) opens it.
	g2, err := New(Options{Home: t.TempDir(), Allow: []string{"192.0.2.10:8080"}, InterfaceAddrs: hostAddrs})
	if err != nil {
		t.Fatal(err)
	}
	b2 := &box{gate: g2}
	if d := b2.decide(ctx, "192.0.2.10", 8080); !d.allowed {
		t.Errorf("192.0.2.10:8080 listed but denied: %s", d.reason)
	}
	if d := b2.decide(ctx, "192.0.2.10", 22); d.allowed {
		t.Error("192.0.2.10:8080 listed but port 22 allowed")
	}

	failing := func() ([]net.Addr, error) { return nil, errors.New("netlink: permission denied") }
	if _, err := New(Options{Home: t.TempDir(), InterfaceAddrs: failing}); err == nil || !strings.Contains(err.Error(), "interface addresses") {
		t.Errorf("a failing interface listing must stop the gate, got %v", err)
	}
}

func TestRealInterfaceAddressesAreNotOpenedByWildcard(t *testing.T) {
	// Uses this machine's own addresses but only decides; nothing is dialed.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("cannot list interface addresses: %v", err)
	}
	g, err := New(Options{Home: t.TempDir(), Allow: []string{"*", "0.0.0.0/0", "::/0"}})
	if err != nil {
		t.Fatal(err)
	}
	b := &box{gate: g}
	checked := 0
	for _, a := range netAddrsToIPs(addrs) {
		if a.IsLoopback() {
			continue
		}
		checked++
		if d := b.decide(context.Background(), a.String(), 22); d.allowed {
			t.Errorf("the host's own address %s is reachable under \"*\": %s", a, d.reason)
		}
	}
	if checked == 0 {
		t.Skip("this machine has no non-loopback interface address")
	}
}

func TestCAFileVerifiesPrivateUpstreams(t *testing.T) {
	r := newRig(t, rigOptions{
		caFile:  true,
		allow:   []string{"127.0.0.1/32"},
		secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}},
		names:   map[string]string{"api.secret.test": "127.0.0.1"},
	})
	port := r.upCA.upstream(t, http.HandlerFunc(helloHandler), "api.secret.test")
	resp, err := r.client(r.boxRoots(t)).Get(fmt.Sprintf("https://api.secret.test:%d/ok", port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAllString(resp.Body); resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "hello api.secret.test") {
		t.Fatalf("upstream signed by the ca_file CA: %d %q", resp.StatusCode, body)
	}

	home := t.TempDir()
	for _, tc := range []struct{ file, content, want string }{
		{"missing.pem", "", "no such file"},
		{"empty.pem", "not a certificate\n", "holds no PEM certificate"},
	} {
		path := filepath.Join(home, tc.file)
		if tc.content != "" {
			os.WriteFile(path, []byte(tc.content), 0o600)
		}
		_, err := New(Options{Home: home, CAFile: path})
		if err == nil || !strings.Contains(err.Error(), "terminal.box_network.ca_file") || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("ca_file %s: %v", tc.file, err)
		}
	}
}

// A name refused for the address it resolves to says so in one sentence:
// "vm resolves to 127.0.0.1, which is a loopback address", not "vm
// resolves to 127.0.0.1 is a loopback address".
func TestRefusalOfAResolvedNameIsASentence(t *testing.T) {
	g, err := New(Options{Home: t.TempDir(), Allow: []string{"vm"},
		InterfaceAddrs: func() ([]net.Addr, error) { return nil, nil },
		Resolver:       newFakeResolver(map[string]string{"vm": "127.0.0.1"})})
	if err != nil {
		t.Fatal(err)
	}
	d := (&box{gate: g}).decide(context.Background(), "vm", 80)
	if d.allowed || !strings.HasPrefix(d.reason, "vm resolves to 127.0.0.1, which is a") || !strings.Contains(d.reason, "loopback") {
		t.Errorf("refusal: %q", d.reason)
	}
}
