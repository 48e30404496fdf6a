package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/web"
)

// web_extract reads several pages in one call; a failing URL is reported
// next to the others without failing the call.
func TestWebExtractTool(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/post":
			fmt.Fprint(w, `<html><head><title>Release notes</title></head><body><nav>Home | Blog</nav><article><h1>Release notes</h1>`+
				`<p>Version 2 adds offline mode, faster sync and a new settings page for teams of every size.</p>`+
				`<p>Upgrading keeps every existing project and its history; no manual steps are needed.</p></article></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tl := NewWebExtract(web.NewHTTPFetcher(true))
	r := tl.Run(context.Background(), Call{Args: json.RawMessage(`{"urls":["` + srv.URL + `/post","` + srv.URL + `/gone","ftp://x"]}`)})
	if r.IsError {
		t.Fatalf("result = %s", r.Content)
	}
	var out struct {
		Results []struct {
			URL, Title, Content, Error string
		}
	}
	if err := json.Unmarshal([]byte(r.Content), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 3 || !strings.Contains(out.Results[0].Content, "offline mode") || strings.Contains(out.Results[0].Content, "Home | Blog") {
		t.Errorf("first page = %+v", out.Results)
	}
	if !strings.Contains(out.Results[1].Error, "HTTP 404") || !strings.Contains(out.Results[2].Error, "http://") {
		t.Errorf("errors = %+v", out.Results[1:])
	}
	if r := tl.Run(context.Background(), Call{Args: json.RawMessage(`{"urls":[]}`)}); !r.IsError {
		t.Error("no URLs accepted")
	}
}

// web_search answers from the configured backend (a fake SearXNG here).
func TestWebSearchTool(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"results":[{"title":"Go 1.26 released","url":"https://go.dev/blog/go1.26","content":"notes for %s"}]}`, r.URL.Query().Get("q"))
	}))
	defer srv.Close()
	s, err := web.NewSearcher("", func(k string) string { return map[string]string{"SEARXNG_URL": srv.URL}[k] })
	if err != nil {
		t.Fatal(err)
	}
	r := NewWebSearch(s).Run(context.Background(), Call{Args: json.RawMessage(`{"query":"go release"}`)})
	if r.IsError || !strings.Contains(r.Content, `"url": "https://go.dev/blog/go1.26"`) || !strings.Contains(r.Content, "notes for go release") ||
		!strings.Contains(r.Content, `"backend": "searxng"`) {
		t.Errorf("result = %s", r.Content)
	}
}
