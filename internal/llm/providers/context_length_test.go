package providers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestContextLengthFromModelsEndpoint(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		auth = r.Header.Get("Authorization")
		w.Write([]byte(`{"data":[
			{"id":"anthropic/claude-sonnet-4.6","context_length":1000000},
			{"id":"served-by-vllm","max_model_len":32768},
			{"id":"llamacpp","meta":{"n_ctx_train":8192}},
			{"id":"no-window"}]}`))
	}))
	defer srv.Close()
	env := map[string]string{"OPENROUTER_API_KEY": "sk-or-test", "OPENROUTER_BASE_URL": srv.URL + "/v1"}
	getenv := func(k string) string { return env[k] }
	cases := map[string]int{"anthropic/claude-sonnet-4.6": 1000000, "served-by-vllm": 32768, "llamacpp": 8192}
	for model, want := range cases {
		n, err := ContextLength(context.Background(), Options{Provider: "openrouter", Model: model, Getenv: getenv}, time.Second)
		if err != nil || n != want {
			t.Errorf("%s: got %d, %v; want %d", model, n, err, want)
		}
	}
	if auth != "Bearer sk-or-test" {
		t.Errorf("Authorization = %q", auth)
	}
	for _, model := range []string{"no-window", "unlisted"} {
		if n, err := ContextLength(context.Background(), Options{Provider: "openrouter", Model: model, Getenv: getenv}, time.Second); err == nil || n != 0 {
			t.Errorf("%s: got %d, %v; want an error", model, n, err)
		}
	}
	// A custom endpoint that is down fails fast with an error, never a guess.
	srv.Close()
	if _, err := ContextLength(context.Background(), Options{Provider: "custom", Model: "m", BaseURL: srv.URL + "/v1"}, 200*time.Millisecond); err == nil {
		t.Error("want an error for an unreachable endpoint")
	}
}

// An unreachable endpoint is reported once, not as `GET X/models: Get
// "X/models": dial ...` (hermes doctor printed that).
func TestContextLengthUnreachableNamesURLOnce(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	getenv := func(k string) string { return map[string]string{"OPENROUTER_BASE_URL": base}[k] }
	_, err := ContextLength(context.Background(), Options{Provider: "openrouter", Model: "m", Getenv: getenv}, time.Second)
	if err == nil || strings.Count(err.Error(), base) != 1 || strings.Contains(err.Error(), `Get "`) {
		t.Errorf("err = %v", err)
	}
}

// A hostile /models answer: ids with escape sequences, spaces or of a
// megabyte are left out of the list the pickers show.
func TestListModelsDropsImplausibleIDs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"id":"good/model-1.5"},{"id":"evil\u001b]52;c;QUJD\u0007"},{"id":"two words"},` +
			`{"id":"` + strings.Repeat("x", 1<<20) + `"},{"id":""},{"id":"\u009b2J"},{"id":"ok:free"}]}`))
	}))
	defer srv.Close()
	ids, err := ListModels(context.Background(), Options{Provider: "custom", BaseURL: srv.URL}, 5*time.Second)
	if err != nil || strings.Join(ids, ",") != "good/model-1.5,ok:free" {
		t.Errorf("listed %d ids %.80q, %v", len(ids), ids, err)
	}
}
