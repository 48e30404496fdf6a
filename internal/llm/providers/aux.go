package providers

import (
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// AuxSettings are one auxiliary task's model settings (config.yaml
// auxiliary.<task>: title_generation, compression, vision; Hermes
// "auxiliary models", configuration.md).
type AuxSettings struct {
	// Provider is "", "auto" or "main" for the main model's provider (with
	// BaseURL set: that endpoint as provider custom), else a provider name
	// as for Options.Provider ("replay" is refused: a recording holds the
	// main model's calls only).
	Provider string
	// Model is the model id; "" = the main model on the main provider, else
	// the provider's default model.
	Model string
	// BaseURL is an OpenAI-compatible endpoint for the task.
	BaseURL string
	// APIKey is the key for Provider or BaseURL. The main model's key
	// (model.api_key) is never used for another provider or endpoint.
	APIKey string
	// Timeout bounds one call of the task (0 = Default).
	Timeout time.Duration
}

// Aux is the model an auxiliary task calls.
type Aux struct {
	// Provider answers the task's requests; send Model in each request.
	Provider llm.Provider
	Model    string
	// Name is the provider's resolved name ("openrouter", "custom"...).
	Name string
	// Main is set when Provider is the main model's provider (the same
	// client, its retries and, under --record, its recording).
	Main bool
	// Timeout bounds one call (the settings' timeout, else the default
	// given to ResolveAux); the caller applies it to the call's context.
	Timeout time.Duration
}

// ResolveAux returns the model an auxiliary task calls. main are the
// Options the main provider was built from (after Resolve: main.Provider
// and main.Model are the resolved name and model) and mainProvider that
// provider. Settings naming no other provider or endpoint give the main
// provider with s.Model or main.Model; otherwise a new provider is built
// with main's environment, HTTP client, timeouts and retry policy, s's
// key (never main.APIKey), and no recording or replay. def is the task's
// default timeout. Errors name the setting to fix, as New's do.
func ResolveAux(main Options, mainProvider llm.Provider, s AuxSettings, def time.Duration) (Aux, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = def
	}
	p := strings.TrimSpace(s.Provider)
	if (p == "" || p == "auto" || p == "main") && strings.TrimSpace(s.BaseURL) == "" {
		return Aux{Provider: mainProvider, Model: firstNonEmpty(s.Model, main.Model), Name: main.Provider, Main: true, Timeout: timeout}, nil
	}
	if p == "" || p == "auto" || p == "main" {
		p = "custom"
	}
	o := Options{
		Provider: p, Model: strings.TrimSpace(s.Model), BaseURL: strings.TrimSpace(s.BaseURL), APIKey: strings.TrimSpace(s.APIKey),
		Getenv: main.Getenv, HTTPClient: main.HTTPClient, Timeouts: main.Timeouts, Retry: main.Retry,
	}
	if o.Provider == "replay" {
		return Aux{}, errReplayAux
	}
	name, err := Resolve(o)
	if err != nil {
		return Aux{}, err
	}
	o.Provider = name
	if o.Model == "" {
		o.Model = DefaultModel(name)
	}
	prov, err := New(o)
	if err != nil {
		return Aux{}, err
	}
	return Aux{Provider: prov, Model: o.Model, Name: name, Timeout: timeout}, nil
}

type auxError string

func (e auxError) Error() string { return string(e) }

const errReplayAux = auxError("provider replay cannot serve an auxiliary task: a recording holds the main model's calls; use main or another provider")
