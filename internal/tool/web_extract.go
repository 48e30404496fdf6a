package tool

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/web"
)

// webExtractMaxURLs is the most URLs one web_extract call takes (Hermes: 5).
const webExtractMaxURLs = 5

// webExtractChars caps the text of one page shown to the model.
const webExtractChars = 20000

// WebExtract is Hermes's web_extract: pages (HTML, PDF, text) as readable
// markdown, fetched from the host or, in box mode, from inside the box.
type WebExtract struct{ fetch web.Fetcher }

// NewWebExtract returns web_extract fetching with f.
func NewWebExtract(f web.Fetcher) *WebExtract { return &WebExtract{fetch: f} }

func (t *WebExtract) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "web_extract",
		Description: "Fetch web pages or PDFs and return their main content as markdown (up to 5 URLs; long pages are truncated).",
		Parameters: json.RawMessage(`{"type":"object","properties":{"urls":{"type":"array","items":{"type":"string"},` +
			`"description":"URLs to read (http or https), at most 5"}},"required":["urls"]}`)}
}
func (t *WebExtract) Toolset() string { return "web" }
func (t *WebExtract) Parallel() bool  { return true }

func (t *WebExtract) Run(ctx context.Context, call Call) Result {
	var args struct {
		URLs []string `json:"urls"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	if len(args.URLs) == 0 || len(args.URLs) > webExtractMaxURLs {
		return Errorf("urls must hold 1 to %d URLs, got %d", webExtractMaxURLs, len(args.URLs))
	}
	type item struct {
		web.Document
		Error string `json:"error,omitempty"`
	}
	out := make([]item, len(args.URLs))
	var wg sync.WaitGroup
	for i, u := range args.URLs {
		u = strings.TrimSpace(u)
		out[i].URL = u
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			out[i].Error = "not an http:// or https:// URL"
			continue
		}
		wg.Go(func() {
			p, err := t.fetch.Fetch(ctx, call.SessionID, u)
			if err == nil {
				var d web.Document
				if d, err = web.Extract(p, webExtractChars); err == nil {
					out[i].Document = d
				}
			}
			if err != nil {
				out[i].Error = err.Error()
			}
		})
	}
	wg.Wait()
	failed := 0
	for _, it := range out {
		if it.Error != "" {
			failed++
		}
	}
	r := JSON(map[string]any{"results": out})
	r.IsError = failed == len(out)
	return r
}
