package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// AuxiliaryConfig is the auxiliary: section: the models of the side tasks
// (Hermes "auxiliary.<task>", configuration.md). Each task defaults to the
// main model; the keys of Hermes's other tasks (approval, skills_hub, ...)
// load without effect.
type AuxiliaryConfig struct {
	// TitleGeneration writes session titles after the first exchange
	// (alias auxiliary.title).
	TitleGeneration AuxTitleConfig `yaml:"title_generation"`
	// Compression writes context compression summaries (legacy keys
	// compression.summary_model/summary_provider/summary_base_url).
	Compression AuxModelConfig `yaml:"compression"`
	// Vision describes images (vision_analyze).
	Vision AuxModelConfig `yaml:"vision"`
}

// AuxModelConfig is one auxiliary task's model. All empty means the main
// model (provider, endpoint and key of model:).
type AuxModelConfig struct {
	// Provider is "", auto or main (the main model's provider; with
	// base_url set, that endpoint as provider custom), or a provider name
	// (Providers()), whose key comes from its variables.
	Provider string `yaml:"provider"`
	// Model is the model id; "" = the main model on the main provider,
	// else the provider's default model.
	Model string `yaml:"model"`
	// BaseURL is an OpenAI-compatible endpoint for this task.
	BaseURL string `yaml:"base_url"`
	// APIKey is the key for Provider or BaseURL; the main model's key is
	// never sent to another provider or endpoint.
	APIKey string `yaml:"api_key"`
	// Timeout bounds one call of the task, in seconds (0 = the task's default).
	Timeout int `yaml:"timeout"`
}

// AuxTitleConfig is auxiliary.title_generation: AuxModelConfig's keys and
// enabled.
type AuxTitleConfig struct {
	// Enabled: false keeps the immediate title (the first prompt's first
	// line) and never asks a model; unset = true.
	Enabled  *bool  `yaml:"enabled"`
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	Timeout  int    `yaml:"timeout"`
}

// Settings is the task's model settings.
func (t AuxTitleConfig) Settings() AuxModelConfig {
	return AuxModelConfig{Provider: t.Provider, Model: t.Model, BaseURL: t.BaseURL, APIKey: t.APIKey, Timeout: t.Timeout}
}

// Configured reports whether the task names its own provider, model or
// endpoint (anything but the main model by default).
func (m AuxModelConfig) Configured() bool {
	p := strings.TrimSpace(m.Provider)
	return (p != "" && p != "auto" && p != "main") || strings.TrimSpace(m.Model) != "" || strings.TrimSpace(m.BaseURL) != ""
}

// AuxTask names an auxiliary task: its key under auxiliary:.
type AuxTask string

// The auxiliary tasks this build runs.
const (
	AuxTitle       AuxTask = "title_generation"
	AuxCompression AuxTask = "compression"
	AuxVision      AuxTask = "vision"
)

// AuxDefaultTimeout is task's per-call bound in seconds when its timeout
// is unset or 0: 30 for titles (a one-shot run may wait for one), 120 for
// the others. Defaults() carries it, so config get/show print it.
func AuxDefaultTimeout(task AuxTask) int {
	if task == AuxTitle {
		return 30
	}
	return 120
}

// Aux returns task's model settings; an unknown task has none (the main model).
func (c *Config) Aux(task AuxTask) AuxModelConfig {
	switch task {
	case AuxTitle:
		return c.Auxiliary.TitleGeneration.Settings()
	case AuxCompression:
		m := c.Auxiliary.Compression
		if !m.Configured() {
			// Hermes before config version 17 kept these under compression:.
			m.Provider, m.Model, m.BaseURL = c.Compression.SummaryProvider, c.Compression.SummaryModel, c.Compression.SummaryBaseURL
			m.APIKey, m.Timeout = c.Auxiliary.Compression.APIKey, c.Auxiliary.Compression.Timeout
		}
		return m
	case AuxVision:
		return c.Auxiliary.Vision
	}
	return AuxModelConfig{}
}

// auxProblems checks each task's provider and endpoint the way Problems
// checks model:; where names a key's file and line.
func auxProblems(c *Config, where func(string) string, getenv func(string) string) []string {
	var out []string
	for _, task := range []AuxTask{AuxTitle, AuxCompression, AuxVision} {
		out = append(out, modelProblems(c.Aux(task), "auxiliary."+string(task), where, getenv)...)
	}
	d := c.Delegation
	return append(out, modelProblems(AuxModelConfig{Provider: d.Provider, Model: d.Model, BaseURL: d.BaseURL, APIKey: d.APIKey}, "delegation", where, getenv)...)
}

// modelProblems are what is wrong with the model settings m under key
// (auxiliary.<task>, delegation).
func modelProblems(m AuxModelConfig, key string, where func(string) string, getenv func(string) string) []string {
	var out []string
	p := preset.Canonical(strings.TrimSpace(m.Provider))
	switch {
	case p == "" || p == "auto" || p == "main" || p == "custom":
		if p == "custom" && m.BaseURL == "" {
			out = append(out, fmt.Sprintf("%s: provider custom needs the endpoint; set %s.base_url (e.g. http://localhost:11434/v1)", where(key+".provider"), key))
		}
	case p == "replay" || !slices.Contains(Providers(), p):
		out = append(out, fmt.Sprintf("%s: unknown provider %q; use main (the main model's), auto, or one of %s",
			where(key+".provider"), m.Provider, strings.Join(Providers()[:len(Providers())-1], ", ")))
	case m.APIKey == "" && !keyOptional(p):
		names := ProviderKeyEnv(p)
		found := false
		for _, n := range names {
			found = found || getenv(n) != ""
		}
		if !found && len(names) > 0 {
			out = append(out, fmt.Sprintf("%s: provider %s needs %s; run: hermes config set %s ... (or set %s.api_key)", where(key+".provider"), p, names[0], names[0], key))
		}
	}
	if m.BaseURL != "" {
		if err := CheckBaseURL(m.BaseURL); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", where(key+".base_url"), err))
		}
	}
	if m.Timeout < 0 {
		out = append(out, fmt.Sprintf("%s: must not be negative (seconds; 0 = the default)", where(key+".timeout")))
	}
	return out
}
