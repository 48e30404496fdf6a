package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// ContextLength asks an OpenAI-compatible endpoint's GET /models for the
// context window of o.Model, in tokens (Hermes "context length detection
// chain": config override → endpoint /models → family default; the caller
// handles the first and last steps). It understands the fields that
// OpenRouter (context_length, top_provider.context_length), vLLM
// (max_model_len), LM Studio/llama.cpp (max_context_length, context_window,
// meta.n_ctx_train) report. It returns 0 and an error when the endpoint
// does not answer within timeout or does not list the model with a window.
// Anthropic and replay providers return 0, nil (no such endpoint).
func ContextLength(ctx context.Context, o Options, timeout time.Duration) (int, error) {
	name, err := Resolve(o)
	if err != nil || !listsModels(name) {
		return 0, err
	}
	list, base, err := fetchModels(ctx, name, o, timeout)
	if err != nil {
		return 0, err
	}
	for _, m := range list {
		if m.ID == o.Model {
			if n := m.window(); n > 0 {
				return n, nil
			}
			return 0, fmt.Errorf("%s/models lists %s without a context window", base, o.Model)
		}
	}
	return 0, fmt.Errorf("%s/models does not list %s", base, o.Model)
}

// listsModels is whether provider name has an OpenAI-compatible GET
// /models (not replay nor the Anthropic Messages presets).
func listsModels(name string) bool {
	if p, ok := preset.Lookup(name); ok {
		return p.Wire == preset.OpenAI
	}
	return name != "replay"
}

// modelEntry is one model of a /models listing, with the window fields of
// the servers we know.
type modelEntry struct {
	ID               string `json:"id"`
	ContextLength    int    `json:"context_length"`
	ContextWindow    int    `json:"context_window"`
	MaxModelLen      int    `json:"max_model_len"`
	MaxContextLength int    `json:"max_context_length"`
	TopProvider      struct {
		ContextLength int `json:"context_length"`
	} `json:"top_provider"`
	Meta struct {
		NCtxTrain int `json:"n_ctx_train"`
	} `json:"meta"`
}

func (m modelEntry) window() int {
	for _, n := range []int{m.ContextLength, m.TopProvider.ContextLength, m.MaxModelLen, m.MaxContextLength, m.ContextWindow, m.Meta.NCtxTrain} {
		if n > 0 {
			return n
		}
	}
	return 0
}

// ListModels returns the model ids the provider's GET /models lists (the
// `hermes setup model` and /model pickers), in the endpoint's order. It
// fails for providers without an OpenAI-compatible listing (anthropic,
// replay) and when the endpoint does not answer within timeout.
func ListModels(ctx context.Context, o Options, timeout time.Duration) ([]string, error) {
	name, err := Resolve(o)
	if err != nil {
		return nil, err
	}
	if !listsModels(name) {
		return nil, fmt.Errorf("provider %s has no model list here; type the model id", name)
	}
	list, _, err := fetchModels(ctx, name, o, timeout)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, m := range list {
		if plausibleModelID(m.ID) {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

// maxModelID bounds a listed model id's length in bytes.
const maxModelID = 256

// plausibleModelID is whether id can be a model id: not empty, at most
// maxModelID bytes, without spaces or control characters. The list comes
// from the endpoint: an id with escape sequences would reach the
// person's terminal in the pickers, then config.yaml.
func plausibleModelID(id string) bool {
	return id != "" && len(id) <= maxModelID && !strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError
	})
}

// fetchModels reads GET BASE/models of the provider name; it returns the
// entries and the base URL it asked.
func fetchModels(ctx context.Context, name string, o Options, timeout time.Duration) ([]modelEntry, string, error) {
	getenv := getenvOf(o)
	base, key := o.BaseURL, o.APIKey
	if p, ok := preset.Lookup(name); ok {
		k, _ := p.Key(getenv)
		base = firstNonEmpty(o.BaseURL, p.URL(getenv))
		key = firstNonEmpty(o.APIKey, k)
	}
	if base == "" {
		return nil, "", fmt.Errorf("no base URL for provider %s", name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/models", nil)
	if err != nil {
		return nil, base, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error repeats the method and URL: "GET X: Get \"X\": dial ...".
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, base, fmt.Errorf("GET %s/models: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, base, fmt.Errorf("GET %s/models: HTTP %d", base, resp.StatusCode)
	}
	var list struct {
		Data []modelEntry `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&list); err != nil {
		return nil, base, fmt.Errorf("GET %s/models: %w", base, err)
	}
	return list.Data, base, nil
}
