package modelproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// FuzzHandler sends arbitrary paths, credentials and bodies to the proxy
// (its upstream echoes what it got, credential included): the handler
// never panics, never answers without the token, and never shows the
// provider key to the caller.
func FuzzHandler(f *testing.F) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, r.Header.Get("Authorization")+" "+string(b))
	}))
	defer echo.Close()
	p, err := New(Config{Endpoint: providers.Endpoint{Name: "custom", Wire: preset.OpenAI, BaseURL: echo.URL, APIKey: realKey, Model: "m"},
		Token: testToken, MaxBody: 1024})
	if err != nil {
		f.Fatal(err)
	}
	h := p.Handler()
	f.Add("/v1/chat/completions", "Bearer "+testToken, `{"model":"x"}`)
	f.Add("/v1/models", "bearer "+testToken, ``)
	f.Add("/v1/responses", "Bearer "+testToken, `{"input":"hi"}`)
	f.Add("/v1/chat/completions", "Bearer wrong", `{}`)
	f.Add("/status", "Basic "+testToken, `[]`)
	f.Fuzz(func(t *testing.T, path, auth, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t?#%") {
			return
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), realKey) {
			t.Fatalf("key shown to the caller: %q", rec.Body.String())
		}
		authorised := len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") && strings.TrimSpace(auth[7:]) == testToken
		if !authorised && rec.Code != http.StatusUnauthorized {
			t.Fatalf("answered %d without the token (auth %q)", rec.Code, auth)
		}
	})
}
