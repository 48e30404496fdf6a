package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxResults is the most results web_search returns (Hermes: ≤ 5).
const MaxResults = 5

// Result is one search hit.
type Result struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// Searcher is a search backend.
type Searcher struct {
	// Name is the backend: searxng, brave, tavily, exa, firecrawl.
	Name   string
	search func(ctx context.Context, c *http.Client, query string) ([]Result, error)
	client *http.Client
}

// Search runs query and returns at most MaxResults hits.
func (s *Searcher) Search(ctx context.Context, query string) ([]Result, error) {
	res, err := s.search(ctx, s.client, query)
	if err != nil {
		return nil, fmt.Errorf("%s search: %w", s.Name, err)
	}
	if len(res) > MaxResults {
		res = res[:MaxResults]
	}
	return res, nil
}

// Backends lists the search backends with the variable each needs, in
// the order they are picked when web.search_backend is unset.
var Backends = []struct{ Name, Env string }{
	{"searxng", "SEARXNG_URL"}, {"brave", "BRAVE_API_KEY"}, {"tavily", "TAVILY_API_KEY"},
	{"exa", "EXA_API_KEY"}, {"firecrawl", "FIRECRAWL_API_KEY"},
}

// EnableHint tells a person how to turn web_search on.
const EnableHint = "set one of SEARXNG_URL (a SearXNG instance with the JSON format on), BRAVE_API_KEY, TAVILY_API_KEY, " +
	"EXA_API_KEY or FIRECRAWL_API_KEY in ~/.hermes/.env (web.search_backend picks one when several are set)"

// NewSearcher picks the backend: want (web.search_backend) when set, else
// the first of Backends whose variable getenv finds. It returns nil, nil
// when none is configured, and an error when want names an unknown
// backend or one whose variable is unset.
func NewSearcher(want string, getenv func(string) string) (*Searcher, error) {
	client := &http.Client{Timeout: 20 * time.Second}
	for _, b := range Backends {
		if want != "" && want != b.Name {
			continue
		}
		v := strings.TrimSpace(getenv(b.Env))
		if v == "" {
			if want != "" {
				return nil, fmt.Errorf("web.search_backend is %s but %s is not set; set it in ~/.hermes/.env", want, b.Env)
			}
			continue
		}
		return &Searcher{Name: b.Name, search: backendFunc(b.Name, v), client: client}, nil
	}
	if want != "" {
		return nil, fmt.Errorf("web.search_backend %q is not one of searxng, brave, tavily, exa, firecrawl", want)
	}
	return nil, nil
}

func backendFunc(name, v string) func(context.Context, *http.Client, string) ([]Result, error) {
	switch name {
	case "searxng":
		return func(ctx context.Context, c *http.Client, q string) ([]Result, error) { return searxng(ctx, c, v, q) }
	case "brave":
		return func(ctx context.Context, c *http.Client, q string) ([]Result, error) { return brave(ctx, c, v, q) }
	case "tavily":
		return func(ctx context.Context, c *http.Client, q string) ([]Result, error) {
			return postJSON(ctx, c, "https://api.tavily.com/search", map[string]string{"Authorization": "Bearer " + v},
				map[string]any{"query": q, "max_results": MaxResults}, "results", "content")
		}
	case "exa":
		return func(ctx context.Context, c *http.Client, q string) ([]Result, error) {
			return postJSON(ctx, c, "https://api.exa.ai/search", map[string]string{"x-api-key": v},
				map[string]any{"query": q, "numResults": MaxResults, "contents": map[string]any{"summary": true}}, "results", "summary")
		}
	default: // firecrawl
		return func(ctx context.Context, c *http.Client, q string) ([]Result, error) {
			return postJSON(ctx, c, "https://api.firecrawl.dev/v1/search", map[string]string{"Authorization": "Bearer " + v},
				map[string]any{"query": q, "limit": MaxResults}, "data", "description")
		}
	}
}

// searxng queries a SearXNG instance's JSON API (/search?format=json).
func searxng(ctx context.Context, c *http.Client, base, q string) ([]Result, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + "/search")
	if err != nil {
		return nil, fmt.Errorf("SEARXNG_URL %q: %w", base, err)
	}
	u.RawQuery = url.Values{"q": {q}, "format": {"json"}}.Encode()
	var body struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := getJSON(ctx, c, u.String(), nil, &body); err != nil {
		return nil, err
	}
	var out []Result
	for _, r := range body.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Description: r.Content})
	}
	return out, nil
}

// brave queries the Brave Search web API.
func brave(ctx context.Context, c *http.Client, key, q string) ([]Result, error) {
	u := "https://api.search.brave.com/res/v1/web/search?" + url.Values{"q": {q}, "count": {fmt.Sprint(MaxResults)}}.Encode()
	var body struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := getJSON(ctx, c, u, map[string]string{"X-Subscription-Token": key, "Accept": "application/json"}, &body); err != nil {
		return nil, err
	}
	var out []Result
	for _, r := range body.Web.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Description: r.Description})
	}
	return out, nil
}

func getJSON(ctx context.Context, c *http.Client, u string, hdr map[string]string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return doJSON(c, req, hdr, v)
}

// postJSON posts body and reads list[i].{title,url,<desc>}.
func postJSON(ctx context.Context, c *http.Client, u string, hdr map[string]string, body map[string]any, list, desc string) ([]Result, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	var resp map[string]json.RawMessage
	if err := doJSON(c, req, hdr, &resp); err != nil {
		return nil, err
	}
	var items []map[string]any
	_ = json.Unmarshal(resp[list], &items)
	var out []Result
	for _, it := range items {
		s := func(k string) string { v, _ := it[k].(string); return v }
		out = append(out, Result{Title: s("title"), URL: s("url"), Description: s(desc)})
	}
	return out, nil
}

func doJSON(c *http.Client, req *http.Request, hdr map[string]string, v any) error {
	for k, val := range hdr {
		req.Header.Set(k, val)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the answer is not the expected JSON: %w", err)
	}
	return nil
}
