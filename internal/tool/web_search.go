package tool

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/web"
)

// WebSearch is Hermes's web_search on the configured backend (SearXNG,
// Brave, Tavily, Exa or Firecrawl); it is only offered when one is set.
type WebSearch struct{ s *web.Searcher }

// NewWebSearch returns web_search on s.
func NewWebSearch(s *web.Searcher) *WebSearch { return &WebSearch{s: s} }

func (t *WebSearch) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "web_search",
		Description: "Search the web. Returns up to 5 results with title, URL and description; read a result with web_extract.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"The search query"}},"required":["query"]}`)}
}
func (t *WebSearch) Toolset() string { return "web" }
func (t *WebSearch) Parallel() bool  { return true }

func (t *WebSearch) Run(ctx context.Context, call Call) Result {
	var args struct {
		Query string `json:"query"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(args.Query) == "" {
		return Errorf("query is empty; give the words to search for")
	}
	res, err := t.s.Search(ctx, args.Query)
	if err != nil {
		return Errorf("%v", err)
	}
	return JSON(map[string]any{"backend": t.s.Name, "query": args.Query, "results": res})
}
