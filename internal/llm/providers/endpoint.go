package providers

import (
	"errors"
	"strings"

	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// Endpoint is where and how a provider is reached, resolved from Options
// the way New resolves them: what `hermes proxy` forwards to.
type Endpoint struct {
	// Name is the resolved provider slug (or custom).
	Name string
	// Label is the preset's display name ("Vercel AI Gateway"); the slug for custom.
	Label string
	// Wire is the request format the endpoint speaks.
	Wire preset.Wire
	// BaseURL is the API base: for OpenAI, including /v1; for Anthropic,
	// without /v1 (the client adds /v1/messages).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer" (OpenAI) or "x-api-key"
	// (Anthropic); empty for keyless local servers.
	APIKey string
	// AuthToken is ANTHROPIC_AUTH_TOKEN, sent as "Authorization: Bearer"
	// to Anthropic when APIKey is empty.
	AuthToken string
	// KeyEnv names the variable the key came from ("model.api_key" when configured).
	KeyEnv string
	// Model is the model in use: o.Model, else the preset's default.
	Model string
}

// ResolveEndpoint resolves o to the endpoint New would call. Errors name
// the variable or key to set. Replay has no endpoint.
func ResolveEndpoint(o Options) (Endpoint, error) {
	name, err := Resolve(o)
	if err != nil {
		return Endpoint{}, err
	}
	getenv := getenvOf(o)
	ep := Endpoint{Name: name, Label: name, Wire: preset.OpenAI, Model: firstNonEmpty(o.Model, DefaultModel(name))}
	switch name {
	case "replay":
		return Endpoint{}, errors.New("provider replay plays back a recording and has no endpoint to forward to")
	case "custom":
		if o.BaseURL == "" {
			return Endpoint{}, errors.New("provider custom needs an endpoint: set model.base_url in config.yaml")
		}
		ep.BaseURL, ep.APIKey, ep.KeyEnv = o.BaseURL, o.APIKey, "model.api_key"
		return ep, nil
	}
	p, _ := preset.Lookup(name)
	ep.Label, ep.Wire = p.Label, p.Wire
	ep.BaseURL = firstNonEmpty(o.BaseURL, p.URL(getenv))
	key, keyEnv := p.Key(getenv)
	if name == "anthropic" {
		key, keyEnv = firstNonEmpty(getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_TOKEN")), "ANTHROPIC_API_KEY"
		ep.AuthToken = strings.TrimSpace(getenv("ANTHROPIC_AUTH_TOKEN"))
	}
	if o.APIKey != "" {
		key, keyEnv = strings.TrimSpace(o.APIKey), "model.api_key"
	}
	ep.APIKey, ep.KeyEnv = key, keyEnv
	if ep.APIKey == "" && ep.AuthToken == "" && !p.KeyOptional {
		return Endpoint{}, missingKey(name, p.KeyEnv[0])
	}
	if ep.Wire == preset.Anthropic {
		ep.BaseURL = strings.TrimSuffix(strings.TrimSuffix(ep.BaseURL, "/"), "/v1")
	}
	return ep, nil
}
