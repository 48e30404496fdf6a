package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"go.yaml.in/yaml/v4"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/llm/providers"
)

// contextLengthCacheFile caches context windows learned from endpoints, as
// Hermes does (HERMES_HOME/context_length_cache.yaml).
const contextLengthCacheFile = "context_length_cache.yaml"

// contextWindow resolves the model's context window in tokens:
// model.context_length, else the endpoint's /models (cached), else the
// model family's default.
func contextWindow(ctx context.Context, home string, configured int, o providers.Options, provider string) int {
	if configured > 0 {
		return configured
	}
	path := filepath.Join(home, contextLengthCacheFile)
	key := fmt.Sprintf("%s|%s|%s", provider, o.BaseURL, o.Model)
	cache := map[string]int{}
	if b, err := os.ReadFile(path); err == nil {
		_ = yaml.Unmarshal(b, &cache) // a broken cache is rebuilt
	}
	if n := cache[key]; n > 0 {
		return n
	}
	n, err := providers.ContextLength(ctx, o, 3*time.Second)
	if err != nil || n <= 0 {
		// Not every endpoint lists windows (Ollama, Anthropic): use the
		// preset's figure for its default model, else the family default;
		// model.context_length pins it.
		if d := providers.DefaultContextLength(provider, o.Model); d > 0 {
			return d
		}
		return agent.DefaultContextWindow(o.Model)
	}
	cache[key] = n
	if b, err := yaml.Marshal(cache); err == nil {
		_ = renameio.WriteFile(path, b, 0o644, renameio.WithTempDir(home))
	}
	return n
}
