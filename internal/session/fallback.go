package session

import (
	"fmt"
	"io"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/providers"
)

// buildFallbacks builds the providers of fallback_providers (Hermes
// "fallback-providers.md") as rt.fallbacks, in order. An entry that
// cannot be built (its key is not set) is left out with a warning: the
// primary provider still works. Every provider but the last of the chain
// gives up on a refused connection at once (providers.Options.Retry
// NoRetryRefused), since the next one can answer instead.
func (rt *Runtime) buildFallbacks(list []config.FallbackProvider) {
	for i, f := range list {
		if err := f.Check(i); err != nil {
			rt.opts.Warn(fmt.Sprintf("warning: %v; this fallback provider is skipped", err))
			continue
		}
		o := rt.popts
		o.Provider, o.Model, o.BaseURL = f.Provider, f.Model, f.BaseURL
		o.Retry.NoRetryRefused = i < len(list)-1
		p, err := providers.NewFallback(o, f.KeyEnv)
		if err != nil {
			rt.opts.Warn(fmt.Sprintf("warning: fallback_providers[%d] (%s): %v; this fallback provider is skipped", i, f.Label(), err))
			continue
		}
		if cl, isCloser := p.(io.Closer); isCloser {
			rt.closers = append(rt.closers, cl.Close)
		}
		rt.fallbacks = append(rt.fallbacks, agent.Route{Provider: p, Name: preset(f.Provider), Model: f.Model})
	}
}

// preset is the canonical slug of a provider name (its alias resolved).
func preset(name string) string {
	if n, err := providers.Resolve(providers.Options{Provider: name}); err == nil {
		return n
	}
	return name
}

// Fallbacks names the fallback providers in use, in order ("provider/model").
func (rt *Runtime) Fallbacks() []string {
	out := make([]string, len(rt.fallbacks))
	for i, r := range rt.fallbacks {
		out[i] = r.Name + "/" + r.Model
	}
	return out
}
