package modelproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

const (
	testToken = "hpx-test-token-0123456789abcdef"
	realKey   = "sk-upstream-REAL-KEY-4242"
)

// start serves a proxy in front of upstream (an OpenAI-style base URL).
func start(t *testing.T, ep providers.Endpoint) (*Proxy, string) {
	t.Helper()
	p, err := New(Config{Endpoint: ep, Token: testToken, MaxBody: 4096})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = Serve(ctx, ln, p.Handler(), 0); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, "http://" + ln.Addr().String()
}

func openAIEndpoint(base string) providers.Endpoint {
	return providers.Endpoint{Name: "openrouter", Label: "OpenRouter", Wire: preset.OpenAI, BaseURL: base, APIKey: realKey, Model: "default/model"}
}

func post(t *testing.T, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestKeyReachesUpstreamNeverClient: the upstream gets the real key (not
// the proxy token), the caller's answer holds no key, and the model the
// caller left out is filled with the endpoint's.
func TestKeyReachesUpstreamNeverClient(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Turn{Text: "proxied answer", ChunkSize: 4})
	p, base := start(t, openAIEndpoint(up.URL))
	resp, body := post(t, base+"/v1/chat/completions", testToken, `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var text strings.Builder
	for line := range strings.SplitSeq(body, "\n") {
		var ev struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(d), &ev) == nil && len(ev.Choices) > 0 {
			text.WriteString(ev.Choices[0].Delta.Content)
		}
	}
	if text.String() != "proxied answer" {
		t.Errorf("streamed text = %q\n%s", text.String(), body)
	}
	got := up.Requests()[0]
	if got.Header.Get("Authorization") != "Bearer "+realKey {
		t.Errorf("upstream Authorization = %q", got.Header.Get("Authorization"))
	}
	if strings.Contains(string(got.Body), testToken) || got.JSON()["model"] != "default/model" {
		t.Errorf("upstream body = %s", got.Body)
	}
	if strings.Contains(body, realKey) || strings.Contains(strings.Join(flatten(resp.Header), " "), realKey) {
		t.Error("the key reached the caller")
	}
	if s := p.Stats(); s.Requests != 1 || s.Failed != 0 {
		t.Errorf("stats = %+v", s)
	}
}

func flatten(h http.Header) []string {
	var out []string
	for k, v := range h {
		out = append(out, k+": "+strings.Join(v, ","))
	}
	return out
}

// TestTokenRequired: no token, a wrong token and a token of another
// length are refused with 401 and never reach the upstream.
func TestTokenRequired(t *testing.T) {
	up := llmtest.NewServer(t)
	p, base := start(t, openAIEndpoint(up.URL))
	for _, tok := range []string{"", "hpx-test-token-0123456789abcdeX", "short", realKey} {
		resp, body := post(t, base+"/v1/chat/completions", tok, `{"model":"m","messages":[]}`)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "proxy token") {
			t.Errorf("token %q: %d %s", tok, resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/status without token: %d", resp.StatusCode)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	if s := p.Stats(); s.Unauthorized != 5 {
		t.Errorf("unauthorised = %d", s.Unauthorized)
	}
}

// TestStreamsAsItArrives: the caller reads the first frames while the
// upstream is still stalled mid-stream (no buffering in the proxy).
func TestStreamsAsItArrives(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Turn{Text: "one two three four", ChunkSize: 4, StallAfterFrames: 2})
	_, base := start(t, openAIEndpoint(up.URL))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before a data frame: %q %v", line, err)
		}
		if strings.HasPrefix(line, "data: ") {
			return // a frame arrived while the upstream is stalled
		}
	}
}

// TestNonStreamingModelsBoundsAndRedaction: a JSON answer passes through,
// /v1/models is the upstream's list, an oversized body is 413, a non-JSON
// body 400, and an upstream error that echoes the key is redacted.
func TestNonStreamingModelsBoundsAndRedaction(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Turn{RawBody: `{"id":"c1","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"plain"}}]}`, ContentType: "application/json"})
	up.SetModels(llmtest.Model{ID: "vendor/model-a"})
	_, base := start(t, openAIEndpoint(up.URL))
	resp, body := post(t, base+"/v1/chat/completions", testToken, `{"model":"m","messages":[]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"content":"plain"`) {
		t.Errorf("non-stream: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(mb), "vendor/model-a") {
		t.Errorf("/v1/models = %s", mb)
	}
	if resp, body := post(t, base+"/v1/chat/completions", testToken, `{"model":"m","x":"`+strings.Repeat("a", 5000)+`"}`); resp.StatusCode != 413 {
		t.Errorf("oversized: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, base+"/v1/chat/completions", testToken, `not json`); resp.StatusCode != 400 {
		t.Errorf("not json: %d %s", resp.StatusCode, body)
	}

	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"bad key `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`)
	}))
	defer echo.Close()
	_, base2 := start(t, openAIEndpoint(echo.URL+"/v1"))
	resp, body = post(t, base2+"/v1/chat/completions", testToken, `{"model":"m"}`)
	if resp.StatusCode != 401 || strings.Contains(body, realKey) || !strings.Contains(body, "[redacted]") {
		t.Errorf("upstream error: %d %s", resp.StatusCode, body)
	}
}

// TestAnthropicWire: an Anthropic-wire provider gets /v1/messages with
// x-api-key; /v1/chat/completions answers 404 naming the wire.
func TestAnthropicWire(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Turn{Text: "from claude"})
	_, base := start(t, providers.Endpoint{Name: "anthropic", Label: "Anthropic", Wire: preset.Anthropic, BaseURL: up.AnthropicURL, APIKey: realKey, Model: "claude-x"})
	resp, body := post(t, base+"/v1/messages", testToken, `{"max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "from claude") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h := up.Requests()[0].Header
	if h.Get("X-Api-Key") != realKey || h.Get("Authorization") != "" || h.Get("Anthropic-Version") == "" {
		t.Errorf("upstream headers = %v", h)
	}
	if resp, body := post(t, base+"/v1/chat/completions", testToken, `{}`); resp.StatusCode != 404 || !strings.Contains(body, "anthropic wire") {
		t.Errorf("chat on anthropic: %d %s", resp.StatusCode, body)
	}
}
