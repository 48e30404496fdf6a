package providers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// NewFallback builds the provider of one fallback_providers entry as New
// does, with its credential kept to its own host: o.APIKey is ignored (it
// is the main model's), the key comes from the variable keyEnv when set,
// else from the preset provider's own variables, and a preset's own key is
// never sent to a base_url other than the preset's (set keyEnv for such an
// endpoint). Recording and replay do not apply to fallbacks.
func NewFallback(o Options, keyEnv string) (llm.Provider, error) {
	name := preset.Canonical(o.Provider)
	switch name {
	case "", "auto":
		return nil, errors.New("no provider named: set provider (openrouter, anthropic, openai, custom, ...)")
	case "replay":
		return nil, errors.New("replay cannot be a fallback provider")
	}
	getenv := getenvOf(o)
	o.APIKey, o.RecordPath, o.ReplayPath = "", "", ""
	if keyEnv != "" {
		if o.APIKey = strings.TrimSpace(getenv(keyEnv)); o.APIKey == "" {
			return nil, fmt.Errorf("key_env %s is not set (put it in HERMES_HOME/.env: `hermes config set %s ...`)", keyEnv, keyEnv)
		}
	} else if p, ok := preset.Lookup(name); ok && o.BaseURL != "" &&
		strings.TrimRight(o.BaseURL, "/") != strings.TrimRight(p.URL(getenv), "/") {
		return nil, fmt.Errorf("base_url %s is not %s's endpoint, and %s's key is not sent elsewhere: "+
			"set key_env to the variable holding that endpoint's key, or remove base_url", o.BaseURL, name, name)
	}
	return New(o)
}
