package session

import (
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// web_extract is always offered; web_search only when a search backend
// is configured (Hermes: no key, no tool).
func TestWebSearchOfferedOnlyWithABackend(t *testing.T) {
	srv := llmtest.NewServer(t)
	rt := newTestRuntime(t, srv, nil)
	if _, ok := rt.tools.Get("web_extract"); !ok {
		t.Error("web_extract not offered")
	}
	if _, ok := rt.tools.Get("web_search"); ok {
		t.Error("web_search offered with no search backend configured")
	}
	rt = newTestRuntime(t, srv, func(o *Options) {
		if err := o.Config.Override("web.search_backend", "searxng"); err != nil {
			t.Fatal(err)
		}
	})
	if _, ok := rt.tools.Get("web_search"); ok {
		t.Error("web_search offered with web.search_backend searxng but no SEARXNG_URL")
	}
}
