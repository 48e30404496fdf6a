package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
)

const formSecret = "tok-REAL-form-secret-93f1c2"

// boxBrowserSite is a form on the host, reached from the box by the
// host's own name (which must resolve to loopback on the host, so the gate
// can dial it; Chromium sends loopback names straight to the box's own
// loopback, so the name must not be "localhost").
func boxBrowserSite(t *testing.T) (url string, host string, caDER []byte, received func() []string) {
	name, err := os.Hostname()
	if err != nil || name == "localhost" {
		t.Skip("needs a host name other than localhost")
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", name)
	if err != nil || len(addrs) == 0 || !addrs[0].IsLoopback() {
		t.Skipf("needs the host name %q to resolve to loopback (as /etc/hosts does on Debian)", name)
	}
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/submit" {
			r.ParseForm()
			mu.Lock()
			got = append(got, r.PostForm.Get("token"))
			mu.Unlock()
			fmt.Fprint(w, `<!doctype html><title>Saved</title><p>Saved.</p>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Settings</title><form action="/submit" method="post">
<label for="t">API token</label> <input id="t" name="token"> <button type="submit">Save</button></form>`)
	}))
	caDER, leaf := testCertFor(name)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	return fmt.Sprintf("https://%s:%d/", name, port), name, caDER, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// testCertFor makes a private CA and a certificate for host signed by it.
func testCertFor(host string) ([]byte, tls.Certificate) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "browser test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, _ := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	return caDER, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
}

// boxBrowserModel reads each tool result and picks the next call: it
// reads the secret's placeholder in the box, types it into the form,
// submits, then tries a site that is not allowlisted.
func boxBrowserModel(site string, results *[]string) func(llmtest.Request) llmtest.Turn {
	return func(r llmtest.Request) llmtest.Turn {
		var body struct {
			Messages []llmtest.ChatMessage `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		var res []string
		for _, m := range body.Messages {
			if m.Role == "tool" {
				res = append(res, m.Text())
			}
		}
		*results = res
		call := func(name, args string) llmtest.Turn {
			return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: name, Args: args}}}
		}
		ref := func(snap, role, name string) string {
			m := regexp.MustCompile(`- ` + role + ` "` + name + `"[^\n]*\[(@e\d+)\]`).FindStringSubmatch(snap)
			if m == nil {
				return "@e0"
			}
			return m[1]
		}
		switch len(res) {
		case 0:
			return call("terminal", `{"command":"echo $FORM_TOKEN"}`)
		case 1:
			return call("browser_navigate", `{"url":"`+site+`"}`)
		case 2:
			return call("browser_snapshot", `{}`)
		case 3:
			placeholder := regexp.MustCompile(`hermes-secret-FORM_TOKEN-[0-9a-f]+`).FindString(res[0])
			return call("browser_type", `{"ref":"`+ref(res[2], "textbox", "API token")+`","text":"`+placeholder+`"}`)
		case 4:
			return call("browser_snapshot", `{}`)
		case 5:
			return call("browser_click", `{"ref":"`+ref(res[2], "button", "Save")+`"}`)
		case 6:
			return call("browser_navigate", `{"url":"http://denied.test/"}`)
		case 7:
			return call("browser_navigate", `{"url":"https://denied.test/"}`)
		case 8:
			return call("web_extract", `{"urls":["`+site+`","http://denied.test/"]}`)
		default:
			return llmtest.Turn{Text: "done"}
		}
	}
}

// In box mode Chromium runs inside the session's box and all its traffic
// goes through the egress gate: the allowlisted site is reached, a site
// that is not allowlisted is refused with the gate's message in the tool
// result, and a secret placeholder typed into a form arrives at the site
// as the real value without the value reaching the snapshot, the model or
// the stored session. web_extract fetches through the same gate.
func TestBoxBrowserGoesThroughTheEgressGate(t *testing.T) {
	if browser.FindChromium() == "" {
		t.Skip("no Chromium on the host for the box's host image (Debian: apt-get install chromium)")
	}
	site, host, caDER, received := boxBrowserSite(t)
	srv := llmtest.NewServer(t)
	var results []string
	srv.SetResponder(boxBrowserModel(site, &results))
	c := newBoxCLIWith(t, "")
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  backend: box\n  cwd: " + c.ws + "\n  container_memory: 2048\n  container_disk: 512\n" +
		"  box_network:\n    allow: [\"127.0.0.1/32\"]\n    ca_file: site-ca.pem\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(c.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.home, "site-ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := egress.SetSecret(c.home, egress.Secret{Name: "FORM_TOKEN", Value: formSecret, Hosts: []string{host}}); err != nil {
		t.Fatal(err)
	}
	out, errs, code := c.run(t, "", "chat", "-q", "save the token", "--yolo", "--toolsets", "browser,terminal,web", "-Q")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("chat exited %d:\n%s\n%s\nresults:\n%s", code, out, errs, strings.Join(results, "\n---\n"))
	}
	if len(results) < 9 {
		t.Fatalf("only %d tool results:\n%s", len(results), strings.Join(results, "\n---\n"))
	}
	if !strings.Contains(results[1], `"title": "Settings"`) {
		t.Errorf("allowlisted site not reached from the box: %s", results[1])
	}
	if !strings.Contains(results[4], `value="hermes-secret-FORM_TOKEN-`) {
		t.Errorf("snapshot after typing does not show the placeholder:\n%s", results[4])
	}
	if got := received(); len(got) != 1 || got[0] != formSecret {
		t.Errorf("site received %q, want the real secret once", got)
	}
	for i, want := range map[int]string{6: "hermes egress denied denied.test:80", 7: "hermes egress denied denied.test:443"} {
		if !strings.Contains(results[i], want) {
			t.Errorf("result %d = %s, want the gate's refusal %q", i, results[i], want)
		}
	}
	if !strings.Contains(results[8], "API token") || !strings.Contains(results[8], "hermes egress denied denied.test:80") {
		t.Errorf("web_extract from the box = %s, want the allowed page and the gate's refusal", results[8])
	}
	for i, r := range results {
		if strings.Contains(r, formSecret) {
			t.Errorf("tool result %d holds the real secret: %s", i, r)
		}
	}
	st, err := store.OpenReadOnly(filepath.Join(c.home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sessions, err := st.List(context.Background(), store.ListOptions{})
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions = %v, %v", sessions, err)
	}
	msgs, err := st.Messages(context.Background(), sessions[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if b, _ := json.Marshal(m); strings.Contains(string(b), formSecret) {
			t.Errorf("stored message holds the real secret: %s", b)
		}
	}
}
