package egress

import (
	"crypto/x509"
	"encoding/pem"
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
