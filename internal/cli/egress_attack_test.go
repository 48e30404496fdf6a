package cli

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/egress"
)

// storedSecret is the value the attacks below try to read back.
const storedSecret = "sk-attack-0123456789abcdef-TOKEN"

// secretUpstreamCLI is a box-enabled HERMES_HOME with the secret API_KEY
// bound to localhost, whose HTTPS upstream (a certificate for localhost
// from a private CA given as terminal.box_network.ca_file) serves the real
// value back, as a gist or paste the box wrote earlier would.
func secretUpstreamCLI(t *testing.T) (*boxCLI, int) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl (apt-get install curl)")
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "attack test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, _ := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Stored", storedSecret)
		body := "stored: " + storedSecret + " upper: " + strings.ToUpper(storedSecret)
		switch r.URL.Path {
		case "/gz2": // two Content-Encoding lines
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			io.WriteString(zw, body)
			zw.Close()
			w.Header().Add("Content-Encoding", "identity")
			w.Header().Add("Content-Encoding", "gzip")
			w.Write(buf.Bytes())
		case "/blob": // GitHub's blob API: base64 wrapped at 60 columns, breaks escaped in JSON
			enc := base64.StdEncoding.EncodeToString([]byte("blob: xxxxxxxx" + storedSecret + "\n"))
			var wrapped []string
			for i := 0; i < len(enc); i += 60 {
				wrapped = append(wrapped, enc[i:min(i+60, len(enc))])
			}
			fmt.Fprintf(w, `{"content":"%s\n","encoding":"base64"}`, strings.Join(wrapped, `\n`))
		case "/slice":
			if r.Header.Get("Range") != "" {
				w.WriteHeader(http.StatusPartialContent)
				io.WriteString(w, storedSecret[3:13])
				return
			}
			io.WriteString(w, body)
		default:
			io.WriteString(w, body)
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	c := newBoxCLIWith(t, "  box_network:\n    allow: [\"127.0.0.1/32\", \"::1\"]\n    ca_file: upstream-ca.pem\n")
	os.WriteFile(filepath.Join(c.home, "upstream-ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	if err := egress.SetSecret(c.home, egress.Secret{Name: "API_KEY", Value: storedSecret, Hosts: []string{"localhost"}}); err != nil {
		t.Fatal(err)
	}
	return c, port
}

// leaksStored reports whether out holds 8 or more contiguous characters
// of storedSecret, in any ASCII case.
func leaksStored(out string) bool {
	lo, lv := strings.ToLower(out), strings.ToLower(storedSecret)
	for k := 0; k+8 <= len(lv); k++ {
		if strings.Contains(lo, lv[k:k+8]) {
			return true
		}
	}
	return false
}

func TestBoxExecCannotReadAStoredSecretBackThroughAnyProxyPath(t *testing.T) {
	c, port := secretUpstreamCLI(t)
	curl := "curl -sk --max-time 20 --noproxy ''"
	attacks := map[string]string{
		"socks5":                     fmt.Sprintf("%s --socks5-hostname 127.0.0.1:3128 -D - https://localhost:%d/gist", curl, port),
		"absolute https:// URL":      fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/3128; printf 'GET https://localhost:%d/gist HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3; timeout 20 cat <&3`, port),
		"two Content-Encoding lines": fmt.Sprintf("%s -x http://127.0.0.1:3128 -H 'Accept-Encoding: identity' -o /tmp/r https://localhost:%d/gz2; gzip -dc /tmp/r 2>/dev/null || cat /tmp/r", curl, port),
		"wrapped base64 blob":        fmt.Sprintf(`%s -x http://127.0.0.1:3128 https://localhost:%d/blob | sed -e 's/.*"content":"//' -e 's/".*//' -e 's/\\n//g' | base64 -d`, curl, port),
		"CONNECT to the address":     fmt.Sprintf("%s -x http://127.0.0.1:3128 https://127.0.0.1:%d/gist", curl, port),
		"socks5 with the address":    fmt.Sprintf("%s --socks5 127.0.0.1:3128 https://localhost:%d/gist", curl, port),
		"range slice":                fmt.Sprintf("%s -x http://127.0.0.1:3128 -r 3-12 https://localhost:%d/slice", curl, port),
	}
	for name, script := range attacks {
		out, errs, code := c.run(t, "", "box", "exec", "--new", "attack", "--", "bash", "-c", script)
		if leaksStored(out) {
			t.Errorf("%s: the stored secret came back in clear:\n%s", name, out)
		}
		refused := name == "range slice" || strings.HasSuffix(name, "the address") // no echo to see
		if !strings.Contains(out, "hermes-secret-API_KEY-") && !refused {
			t.Errorf("%s: the echo did not come back redacted (code %d):\n%s\n%s", name, code, out, errs)
		}
	}
}

func TestBoxExecFloodOfLongDeniedPathsKeepsTheAuditLogSmallAndStatusSafe(t *testing.T) {
	c := newBoxCLI(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl (apt-get install curl)")
	}
	script := `p=$(head -c 100000 /dev/zero | tr '\0' a); for i in $(seq 1 40); do curl -gs -o /dev/null -w "%{http_code} " --max-time 10 --noproxy '' -x http://127.0.0.1:3128 "http://denied.test/%1b%5b2J%1b]0;owned%07/$i/$p"; done; echo done`
	out, errs, code := c.run(t, "", "box", "exec", "--new", "flood", "--", "bash", "-c", script)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("flood: %d %s %s", code, out, errs)
	}
	st, err := os.Stat(egress.AuditPath(c.home))
	if err != nil {
		t.Fatalf("%v (box printed %s)", err, out)
	}
	if st.Size() > 40*1024 {
		t.Fatalf("40 denied requests with 100 KB paths took %d bytes of audit log", st.Size())
	}
	out, errs, code = c.run(t, "", "egress", "status", "-n", "5")
	if code != 0 || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, "denied.test:80/") {
		t.Fatalf("status: %d %s\n%q", code, errs, out)
	}
}
