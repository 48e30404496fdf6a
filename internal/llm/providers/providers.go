// Package providers builds the llm.Provider a run uses from the provider
// name, model, base URL and key that flags, config.yaml and the environment
// give (Hermes Agent providers: the presets of package preset, custom, and
// replay). It applies the retry policy and, when asked, recording.
package providers

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/anthropic"
	"github.com/hermes-go/hermes/internal/llm/openai"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
	"github.com/hermes-go/hermes/internal/llm/replay"
)

// Default base URLs of the built-in providers.
const (
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	OpenAIBaseURL     = "https://api.openai.com/v1"
	AnthropicBaseURL  = "https://api.anthropic.com"
)

// Names returns the accepted provider names ("" and "auto" infer one):
// the preset slugs, custom and replay.
func Names() []string { return append(preset.Slugs(), "custom", "replay") }

// autoFirst are the presets whose keys are checked before a base URL
// selects custom (the order before presets existed); the other presets
// come after, so a key for one provider never goes to a configured base URL.
var autoFirst = []string{"openrouter", "anthropic", "openai"}

// DefaultModel returns the model a provider uses when model.default is
// unset (the preset's, as Hermes starts with its default); "" for custom
// and replay.
func DefaultModel(provider string) string {
	p, _ := preset.Lookup(provider)
	return p.DefaultModel
}

// DefaultContextLength returns model's context window when it is the
// provider's default model (the preset's figure), else 0.
func DefaultContextLength(provider, model string) int {
	if p, ok := preset.Lookup(provider); ok && model == p.DefaultModel {
		return p.ContextLength
	}
	return 0
}

// Options selects and configures a provider.
type Options struct {
	// Provider is openrouter, openai, anthropic, custom or replay; "" or
	// "auto" infers: replay when ReplayPath is set, else openrouter when
	// OPENROUTER_API_KEY is set, else anthropic when ANTHROPIC_API_KEY or
	// ANTHROPIC_AUTH_TOKEN is, else openai when OPENAI_API_KEY is, else
	// custom when BaseURL is set.
	Provider string
	// Model is the model id (model.default or --model); required except for replay.
	Model string
	// BaseURL (model.base_url or a flag) overrides <PROVIDER>_BASE_URL,
	// which overrides the default. Required for custom.
	BaseURL string
	// APIKey (model.api_key) overrides the provider's env var. Optional for custom.
	APIKey string
	// Getenv reads the environment (including HERMES_HOME/.env values); nil reads nothing.
	Getenv func(string) string
	// HTTPClient is used for requests (default: a client whose transport
	// keeps up to MaxIdleConnsPerHost connections to the provider open, so
	// many sessions streaming at once reuse them instead of dialling).
	HTTPClient *http.Client
	// RecordPath, when set, records every model call to this JSONL file
	// (--record); the returned provider then implements io.Closer.
	RecordPath string
	// ReplayPath is the file played back by the replay provider (--replay).
	ReplayPath string
	// Retry bounds retries of 429, 5xx, overload and connection errors
	// (zero value: 3 retries, 2s doubling backoff, 60s cap).
	// Timeouts bound the waits of each model call (zero: the defaults).
	Timeouts llm.Timeouts
	Retry    llm.RetryPolicy
}

// Resolve returns the provider name Options selects, applying the "auto"
// inference described on Options.Provider.
func Resolve(o Options) (string, error) {
	name := preset.Canonical(o.Provider)
	getenv := getenvOf(o)
	if name != "" && name != "auto" {
		for _, n := range Names() {
			if n == name {
				return name, nil
			}
		}
		return "", fmt.Errorf("unknown provider %q: use one of %s (model.provider in config.yaml or --provider)", o.Provider, strings.Join(Names(), ", "))
	}
	if o.ReplayPath != "" {
		return "replay", nil
	}
	for _, n := range autoFirst {
		if p, _ := preset.Lookup(n); p.AutoKey(getenv) {
			return n, nil
		}
	}
	if o.BaseURL != "" {
		return "custom", nil
	}
	for _, p := range preset.All() {
		if !p.KeyOptional && p.AutoKey(getenv) {
			return p.Slug, nil
		}
	}
	return "", errors.New("no model provider configured: set an API key, e.g. `hermes config set OPENROUTER_API_KEY sk-or-...`, " +
		"or choose a provider and model with `hermes model`")
}

// New builds the provider for o, wrapped with retries (and recording when
// o.RecordPath is set). Errors name the env var or config key to set.
//
// RecordPath naming the same file as ReplayPath (after filepath.Abs, or
// the same inode through a link) is an error: recording truncates the file
// first and would destroy the script being replayed.
func New(o Options) (llm.Provider, error) {
	if o.RecordPath != "" && o.ReplayPath != "" && sameFile(o.RecordPath, o.ReplayPath) {
		return nil, fmt.Errorf("--record %s would overwrite the recording being replayed (--replay %s); record to another file",
			o.RecordPath, o.ReplayPath)
	}
	name, err := Resolve(o)
	if err != nil {
		return nil, err
	}
	getenv := getenvOf(o)
	if o.HTTPClient == nil {
		o.HTTPClient = pooledClient()
	}
	if name == "replay" {
		if o.ReplayPath == "" {
			return nil, errors.New("provider replay needs a recording: pass --replay FILE")
		}
		p, err := replay.Open(o.ReplayPath)
		if err != nil {
			return nil, err
		}
		return record(p, o)
	}
	if strings.TrimSpace(o.Model) == "" {
		o.Model = DefaultModel(name)
	}
	if strings.TrimSpace(o.Model) == "" {
		return nil, fmt.Errorf("no model set for provider %s: set model.default in config.yaml or pass --model", name)
	}
	var base llm.Provider
	if name == "custom" {
		if o.BaseURL == "" {
			return nil, errors.New("provider custom needs an endpoint: set model.base_url in config.yaml " +
				"(e.g. `hermes config set model.base_url http://localhost:11434/v1`) or pass --base-url")
		}
		base = openai.New(openai.Config{
			Name: "custom", BaseURL: o.BaseURL, APIKey: o.APIKey, HTTPClient: o.HTTPClient,
			Hints: llm.ErrorHints{KeyFix: "set model.api_key in config.yaml (`hermes config set model.api_key ...`)"},
		})
	} else {
		p, _ := preset.Lookup(name)
		var err error
		if base, err = presetProvider(p, o, getenv); err != nil {
			return nil, err
		}
	}
	return record(llm.WithRetry(llm.WithTimeouts(base, o.Timeouts), o.Retry), o)
}

// presetProvider builds the client of a preset provider: its key from
// model.api_key or its variables, its base URL from model.base_url, its
// base URL variable or the preset.
func presetProvider(p preset.Preset, o Options, getenv func(string) string) (llm.Provider, error) {
	if p.Wire == preset.Anthropic {
		return anthropicProvider(p, o, getenv)
	}
	key, _ := p.Key(getenv)
	key = firstNonEmpty(o.APIKey, key)
	if key == "" && !p.KeyOptional {
		return nil, missingKey(p.Slug, p.KeyEnv[0])
	}
	cfg := openai.Config{
		Name:       p.Slug,
		BaseURL:    firstNonEmpty(o.BaseURL, p.URL(getenv)),
		APIKey:     key,
		HTTPClient: o.HTTPClient,
		Hints:      llm.ErrorHints{KeyFix: keyFix(strings.Join(p.KeyEnv, " or "))},
	}
	if p.Slug == "openrouter" {
		cfg.Headers = map[string]string{"HTTP-Referer": "https://github.com/hermes-go/hermes", "X-Title": "Hermes Agent"}
	}
	return openai.New(cfg), nil
}

// anthropicProvider builds an Anthropic Messages client. For anthropic
// itself ANTHROPIC_AUTH_TOKEN is a bearer token; other presets on this
// wire (MiniMax) send their key as x-api-key.
func anthropicProvider(p preset.Preset, o Options, getenv func(string) string) (llm.Provider, error) {
	key, token := "", ""
	if p.Slug == "anthropic" {
		key, token = firstNonEmpty(o.APIKey, getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_TOKEN")), getenv("ANTHROPIC_AUTH_TOKEN")
		if key == "" && token == "" {
			return nil, errors.New("provider anthropic needs a credential: set ANTHROPIC_API_KEY (an API key) or ANTHROPIC_AUTH_TOKEN " +
				"(a bearer token), e.g. `hermes config set ANTHROPIC_API_KEY ...`, or model.api_key in config.yaml")
		}
	} else {
		k, _ := p.Key(getenv)
		if key = firstNonEmpty(o.APIKey, k); key == "" {
			return nil, missingKey(p.Slug, p.KeyEnv[0])
		}
	}
	return anthropic.New(anthropic.Config{
		BaseURL:    strings.TrimSuffix(strings.TrimSuffix(firstNonEmpty(o.BaseURL, p.URL(getenv)), "/"), "/v1"),
		APIKey:     key,
		AuthToken:  token,
		HTTPClient: o.HTTPClient,
		Hints:      llm.ErrorHints{KeyFix: "set " + strings.Join(p.KeyEnv, " or ") + " (or model.api_key in config.yaml)"},
	}), nil
}

func record(p llm.Provider, o Options) (llm.Provider, error) {
	if o.RecordPath == "" {
		return p, nil
	}
	return replay.NewRecorder(p, o.RecordPath)
}

func keyFix(env string) string {
	return "set " + env + " (or model.api_key in config.yaml)"
}

func missingKey(provider, env string) error {
	return fmt.Errorf("provider %s needs an API key: set %s, e.g. `hermes config set %s ...`, or model.api_key in config.yaml", provider, env, env)
}

// sameFile reports whether paths a and b name one file: equal once made
// absolute and cleaned, or, when both exist, the same file on disk.
func sameFile(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA == nil && errB == nil && absA == absB {
		return true
	}
	stA, errA := os.Stat(a)
	stB, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(stA, stB)
}

func getenvOf(o Options) func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return func(string) string { return "" }
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// MaxIdleConnsPerHost is how many idle connections to one provider host
// the default client keeps. net/http keeps 2, so a gateway with hundreds
// of sessions streaming at once dialled (and TLS-handshook) a new
// connection for most model calls.
const MaxIdleConnsPerHost = 64

// pooledClient is the default model-call client: http.DefaultTransport's
// settings (proxy from the environment, timeouts, HTTP/2) with a larger
// idle pool per host.
func pooledClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return &http.Client{Transport: t}
}
