package main_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestOnlyOpenRouterKeyStartsWithDefaultModel: with OPENROUTER_API_KEY set
// and no config, hermes starts with the provider's default model (as
// Hermes does) instead of exiting "no model set" (issue 25).
func TestOnlyOpenRouterKeyStartsWithDefaultModel(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "ready"})
	res := e.mustRun("chat", "-Q", "-q", "hello")
	if strings.TrimSpace(res.stdout) != "ready" {
		t.Fatalf("%s", res)
	}
	if got := e.request(0)["model"]; got != "anthropic/claude-opus-4.6" {
		t.Errorf("model sent = %v", got)
	}
}

// TestAIGatewayWithVercelOIDCToken: model.provider ai-gateway with only
// VERCEL_OIDC_TOKEN (as `vercel env pull` gives) sends that token to the
// gateway and the default model.
func TestAIGatewayWithVercelOIDCToken(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "via gateway"})
	e.env = []string{"AI_GATEWAY_BASE_URL=" + e.srv.URL, "VERCEL_OIDC_TOKEN=oidc-token-xyz"}
	e.mustRun("config", "set", "model.provider", "ai-gateway")
	res := e.mustRun("chat", "-Q", "-q", "hello")
	if strings.TrimSpace(res.stdout) != "via gateway" {
		t.Fatalf("%s", res)
	}
	if h := e.srv.Requests()[0].Header.Get("Authorization"); h != "Bearer oidc-token-xyz" {
		t.Errorf("Authorization = %q", h)
	}
	if got := e.request(0)["model"]; got != "anthropic/claude-opus-4.6" {
		t.Errorf("model sent = %v", got)
	}
}

// TestProxyStartStatusStop runs `hermes proxy start` as a process: it
// prints the token, forwards a request with the host's key (the caller
// holds only the token), `hermes proxy status` shows the listener,
// provider and counts, and SIGTERM stops it and removes its state.
func TestProxyStartStatusStop(t *testing.T) {
	e := newE2E(t, llmtest.Turn{RawBody: `{"id":"c","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"ok"}}]}`, ContentType: "application/json"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd, _, stderr := e.command(ctx, nil, "proxy", "start", "--port", "0")
	cmd.Stdout = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var base, token string
	for sc.Scan() && token == "" {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "hermes proxy listening on "); ok {
			base = u
		}
		if tk, ok := strings.CutPrefix(line, "token     "); ok {
			token = tk
		}
	}
	if base == "" || !strings.HasPrefix(token, "hpx-") {
		t.Fatalf("banner: base %q token %q; stderr %s", base, token, stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	// A web page (another Origin) is refused even with the token, as on
	// every hermes listener (httpguard), and reaches no provider.
	req, _ := http.NewRequest(http.MethodPost, base+"/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(e.srv.Requests()) != 0 {
		t.Fatalf("cross-origin request: %d, %d upstream requests; want 403 and none", resp.StatusCode, len(e.srv.Requests()))
	}
	req, _ = http.NewRequest(http.MethodPost, base+"/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"content":"ok"`) || strings.Contains(string(body), fakeOpenRouterKey) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if h := e.srv.Requests()[0].Header.Get("Authorization"); h != "Bearer "+fakeOpenRouterKey {
		t.Errorf("upstream Authorization = %q", h)
	}
	st := e.mustRun("proxy", "status")
	for _, want := range []string{strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1"), "OpenRouter (openrouter)", "requests   1 (0 failed"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	if fi, err := os.Stat(filepath.Join(e.home, "model_proxy", "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr)
	}
	if res := e.run("proxy", "status"); res.code == 0 || !strings.Contains(res.stderr, "not running") {
		t.Errorf("status after stop: %s", res)
	}
}

// fakeReleaseProxy is a file:// GOPROXY in which hermes has a release
// newer than this build (v0.99.0) and older ones.
func fakeReleaseProxy(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "github.com", "hermes-go", "hermes", "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"list":         "v0.20.0\nv0.99.0\nv1.0.0-rc.1\n",
		"v0.99.0.info": `{"Version":"v0.99.0","Time":"2026-12-01T12:00:00Z"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return "file://" + root
}

// TestUpdateCheckAgainstFileProxy: `hermes update --check` finds the
// newer release in GOPROXY and says what it would run; without a Go
// toolchain it prints the commands instead; `hermes version` names the
// install method.
func TestUpdateCheckAgainstFileProxy(t *testing.T) {
	e := newE2E(t)
	proxy := fakeReleaseProxy(t)
	res := e.runEnv([]string{"GOPROXY=" + proxy}, "update", "--check")
	if res.code != 0 || !strings.Contains(res.stdout, "→ v0.99.0 (released 2026-12-01)") ||
		!strings.Contains(res.stdout, "install github.com/hermes-go/hermes/cmd/hermes@v0.99.0") {
		t.Errorf("update --check:\n%s", res)
	}
	res = e.runEnv([]string{"GOPROXY=" + proxy, "PATH=" + t.TempDir()}, "update", "--check")
	if res.code != 0 || !strings.Contains(res.stdout, "no Go toolchain") || !strings.Contains(res.stdout, "go install github.com/hermes-go/hermes/cmd/hermes@v0.99.0") {
		t.Errorf("update --check without go:\n%s", res)
	}
	res = e.runEnv([]string{"GOPROXY=" + proxy}, "update")
	if res.code == 0 || !strings.Contains(res.stderr, "--yes") {
		t.Errorf("update without --yes and no terminal must not install:\n%s", res)
	}
	if v := e.mustRun("version"); !strings.Contains(v.stdout, "Install method: ") {
		t.Errorf("version:\n%s", v)
	}
}
