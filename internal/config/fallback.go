package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"
)

// FallbackProvider is one entry of fallback_providers (Hermes
// "fallback-providers.md"): a provider and model a turn continues on when
// the ones before it fail. Its key comes from KeyEnv, else the preset
// provider's own variable; never from model.api_key or another entry.
type FallbackProvider struct {
	Provider      string `yaml:"provider"`
	Model         string `yaml:"model"`
	BaseURL       string `yaml:"base_url,omitempty"`
	KeyEnv        string `yaml:"key_env,omitempty"`
	APIMode       string `yaml:"api_mode,omitempty"`
	ContextLength int    `yaml:"context_length,omitempty"`
}

// MaxFallbackProviders bounds fallback_providers: each entry can cost a
// full set of retries before the next is tried.
const MaxFallbackProviders = 8

// Label is "provider/model".
func (f FallbackProvider) Label() string { return f.Provider + "/" + f.Model }

// Check reports what is wrong with entry i of fallback_providers, naming
// the key and the fix.
func (f FallbackProvider) Check(i int) error {
	key := fmt.Sprintf("fallback_providers[%d]", i)
	switch {
	case strings.TrimSpace(f.Provider) == "":
		return &Error{Key: key + ".provider", Msg: "missing: name the provider (openrouter, anthropic, openai, custom, ...)"}
	case strings.TrimSpace(f.Model) == "":
		return &Error{Key: key + ".model", Msg: "missing: name the model the provider is asked for"}
	case f.Provider == "custom" && strings.TrimSpace(f.BaseURL) == "":
		return &Error{Key: key + ".base_url", Msg: "provider custom needs base_url (e.g. http://localhost:11434/v1)"}
	case f.KeyEnv != "" && !IsEnvKey(f.KeyEnv):
		return &Error{Key: key + ".key_env", Msg: fmt.Sprintf("%q is not an environment variable name (upper case, e.g. GROQ_API_KEY)", f.KeyEnv)}
	}
	if f.BaseURL != "" && !strings.HasPrefix(f.BaseURL, "${") {
		if err := CheckBaseURL(f.BaseURL); err != nil {
			return &Error{Key: key + ".base_url", Msg: err.Error()}
		}
	}
	return nil
}

// Fallbacks is the fallback chain config.yaml sets: fallback_providers,
// else the legacy single fallback_model.
func (c *Config) Fallbacks() []FallbackProvider {
	if len(c.FallbackProviders) > 0 {
		return c.FallbackProviders
	}
	if c.FallbackModel != nil && c.FallbackModel.Provider != "" {
		return []FallbackProvider{*c.FallbackModel}
	}
	return nil
}

// SetFallbackProviders writes list as config.yaml's fallback_providers
// (block style, other keys and comments kept; an empty list removes the
// key) and drops the legacy fallback_model, which it replaces. Entries are
// checked first; nothing is written when one is wrong.
func SetFallbackProviders(home string, list []FallbackProvider) error {
	if len(list) > MaxFallbackProviders {
		return &Error{Key: "fallback_providers", Msg: fmt.Sprintf("at most %d entries", MaxFallbackProviders)}
	}
	for i, f := range list {
		if err := f.Check(i); err != nil {
			return err
		}
	}
	return withLock(home, func() error {
		path := ConfigPath(home)
		doc, prefix, err := readForEdit(path)
		if err != nil {
			return err
		}
		unsetIn(doc.Content[0], "", []string{"fallback_model"})
		if len(list) == 0 {
			if unsetIn(doc.Content[0], "", []string{"fallback_providers"}) == nil && !exists(path) {
				return nil
			}
			return writeConfig(path, doc, prefix)
		}
		n := &yaml.Node{}
		if err := n.Encode(list); err != nil {
			return &Error{Key: "fallback_providers", Msg: err.Error()}
		}
		if err := setIn(doc.Content[0], "", []string{"fallback_providers"}, n); err != nil {
			return &Error{Path: path, Key: "fallback_providers", Msg: err.Error()}
		}
		return writeConfig(path, doc, prefix)
	})
}
