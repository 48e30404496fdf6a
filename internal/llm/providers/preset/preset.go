// Package preset is the catalog of model providers hermes knows by name:
// for each Hermes Agent provider slug that speaks the OpenAI chat
// completions or the Anthropic Messages wire, its display label, base URL,
// the environment variables that hold its key and override its base URL,
// a default model and that model's context window.
//
// Slugs, labels, base URLs and key variables follow Hermes Agent's
// provider registry (hermes_cli/auth.py PROVIDER_REGISTRY); default models
// are the first entry of Hermes's picker list for the provider
// (hermes_cli/models.py), so `hermes` with only a key set starts as Hermes
// does. The package has no dependencies: config, the CLI and the provider
// factory all read it.
package preset

import "strings"

// Wire is the request format a provider speaks.
type Wire string

// The wires hermes speaks.
const (
	// OpenAI is POST {base}/chat/completions with "Authorization: Bearer".
	OpenAI Wire = "openai"
	// Anthropic is POST {base}/v1/messages with "x-api-key".
	Anthropic Wire = "anthropic"
)

// Preset describes one named provider.
type Preset struct {
	// Slug is the name in model.provider and --provider (Hermes's id).
	Slug string
	// Label is the name `hermes model` shows ("Vercel AI Gateway").
	Label string
	Wire  Wire
	// BaseURL is the default endpoint: for OpenAI, the base including /v1;
	// for Anthropic, the base without /v1.
	BaseURL string
	// BaseURLEnv, when set, names the variable that overrides BaseURL.
	BaseURLEnv string
	// KeyEnv lists the variables that can hold the key, in order of preference.
	KeyEnv []string
	// KeyOptional is true for local servers that take no key (LM Studio).
	KeyOptional bool
	// NoAutoKeys are KeyEnv entries that do not select this provider on
	// their own when model.provider is unset or auto (VERCEL_OIDC_TOKEN is
	// set for Vercel Sandbox too); they are still used once the provider is chosen.
	NoAutoKeys []string
	// DefaultModel is used when model.default is unset.
	DefaultModel string
	// ContextLength is DefaultModel's context window in tokens.
	ContextLength int
}

// all lists the presets in menu order (auto inference order after the
// three original providers, as Hermes scans its registry rows in order).
var all = [...]Preset{
	{Slug: "openrouter", Label: "OpenRouter", Wire: OpenAI, BaseURL: "https://openrouter.ai/api/v1", BaseURLEnv: "OPENROUTER_BASE_URL",
		KeyEnv: []string{"OPENROUTER_API_KEY"}, DefaultModel: "anthropic/claude-opus-4.6", ContextLength: 200_000},
	{Slug: "anthropic", Label: "Anthropic", Wire: Anthropic, BaseURL: "https://api.anthropic.com", BaseURLEnv: "ANTHROPIC_BASE_URL",
		KeyEnv: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_TOKEN"}, DefaultModel: "claude-opus-4-6", ContextLength: 200_000},
	{Slug: "openai", Label: "OpenAI", Wire: OpenAI, BaseURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL",
		KeyEnv: []string{"OPENAI_API_KEY"}, DefaultModel: "gpt-5.4", ContextLength: 400_000},
	{Slug: "ai-gateway", Label: "Vercel AI Gateway", Wire: OpenAI, BaseURL: "https://ai-gateway.vercel.sh/v1", BaseURLEnv: "AI_GATEWAY_BASE_URL",
		KeyEnv: []string{"AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN"}, NoAutoKeys: []string{"VERCEL_OIDC_TOKEN"},
		DefaultModel: "anthropic/claude-opus-4.6", ContextLength: 200_000},
	{Slug: "nous", Label: "Nous Portal", Wire: OpenAI, BaseURL: "https://inference-api.nousresearch.com/v1", BaseURLEnv: "NOUS_INFERENCE_BASE_URL",
		KeyEnv: []string{"NOUS_API_KEY"}, DefaultModel: "Hermes-4-405B", ContextLength: 131_072},
	{Slug: "gemini", Label: "Google AI Studio", Wire: OpenAI, BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", BaseURLEnv: "GEMINI_BASE_URL",
		KeyEnv: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, DefaultModel: "gemini-3.1-pro-preview", ContextLength: 1_048_576},
	{Slug: "zai", Label: "Z.AI / GLM", Wire: OpenAI, BaseURL: "https://api.z.ai/api/paas/v4", BaseURLEnv: "GLM_BASE_URL",
		KeyEnv: []string{"GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"}, DefaultModel: "glm-5.1", ContextLength: 200_000},
	{Slug: "kimi-coding", Label: "Kimi / Moonshot", Wire: OpenAI, BaseURL: "https://api.moonshot.ai/v1", BaseURLEnv: "KIMI_BASE_URL",
		KeyEnv: []string{"KIMI_API_KEY", "KIMI_CODING_API_KEY"}, DefaultModel: "kimi-k2.5", ContextLength: 262_144},
	{Slug: "kimi-coding-cn", Label: "Kimi / Moonshot (China)", Wire: OpenAI, BaseURL: "https://api.moonshot.cn/v1",
		KeyEnv: []string{"KIMI_CN_API_KEY"}, DefaultModel: "kimi-k2.5", ContextLength: 262_144},
	{Slug: "minimax", Label: "MiniMax", Wire: Anthropic, BaseURL: "https://api.minimax.io/anthropic", BaseURLEnv: "MINIMAX_BASE_URL",
		KeyEnv: []string{"MINIMAX_API_KEY"}, DefaultModel: "MiniMax-M2.7", ContextLength: 204_800},
	{Slug: "minimax-cn", Label: "MiniMax (China)", Wire: Anthropic, BaseURL: "https://api.minimaxi.com/anthropic", BaseURLEnv: "MINIMAX_CN_BASE_URL",
		KeyEnv: []string{"MINIMAX_CN_API_KEY"}, DefaultModel: "MiniMax-M2.7", ContextLength: 204_800},
	{Slug: "deepseek", Label: "DeepSeek", Wire: OpenAI, BaseURL: "https://api.deepseek.com/v1", BaseURLEnv: "DEEPSEEK_BASE_URL",
		KeyEnv: []string{"DEEPSEEK_API_KEY"}, DefaultModel: "deepseek-chat", ContextLength: 131_072},
	{Slug: "xai", Label: "xAI", Wire: OpenAI, BaseURL: "https://api.x.ai/v1", BaseURLEnv: "XAI_BASE_URL",
		KeyEnv: []string{"XAI_API_KEY"}, DefaultModel: "grok-4", ContextLength: 256_000},
	{Slug: "nvidia", Label: "NVIDIA NIM", Wire: OpenAI, BaseURL: "https://integrate.api.nvidia.com/v1", BaseURLEnv: "NVIDIA_BASE_URL",
		KeyEnv: []string{"NVIDIA_API_KEY"}, DefaultModel: "nvidia/llama-3.3-nemotron-super-49b-v1.5", ContextLength: 131_072},
	{Slug: "huggingface", Label: "Hugging Face", Wire: OpenAI, BaseURL: "https://router.huggingface.co/v1", BaseURLEnv: "HF_BASE_URL",
		KeyEnv: []string{"HF_TOKEN"}, DefaultModel: "Qwen/Qwen3.5-397B-A17B", ContextLength: 262_144},
	{Slug: "ollama-cloud", Label: "Ollama Cloud", Wire: OpenAI, BaseURL: "https://ollama.com/v1", BaseURLEnv: "OLLAMA_BASE_URL",
		KeyEnv: []string{"OLLAMA_API_KEY"}, DefaultModel: "gpt-oss:120b", ContextLength: 131_072},
	{Slug: "alibaba", Label: "Qwen Cloud", Wire: OpenAI, BaseURL: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", BaseURLEnv: "DASHSCOPE_BASE_URL",
		KeyEnv: []string{"DASHSCOPE_API_KEY"}, DefaultModel: "qwen3.5-plus", ContextLength: 1_000_000},
	{Slug: "kilocode", Label: "Kilo Code", Wire: OpenAI, BaseURL: "https://api.kilo.ai/api/gateway", BaseURLEnv: "KILOCODE_BASE_URL",
		KeyEnv: []string{"KILOCODE_API_KEY"}, DefaultModel: "anthropic/claude-opus-4.6", ContextLength: 200_000},
	{Slug: "opencode-zen", Label: "OpenCode Zen", Wire: OpenAI, BaseURL: "https://opencode.ai/zen/v1", BaseURLEnv: "OPENCODE_ZEN_BASE_URL",
		KeyEnv: []string{"OPENCODE_ZEN_API_KEY"}, DefaultModel: "gpt-5.4", ContextLength: 400_000},
	{Slug: "arcee", Label: "Arcee AI", Wire: OpenAI, BaseURL: "https://api.arcee.ai/api/v1", BaseURLEnv: "ARCEE_BASE_URL",
		KeyEnv: []string{"ARCEEAI_API_KEY"}, DefaultModel: "trinity-large-thinking", ContextLength: 131_072},
	{Slug: "lmstudio", Label: "LM Studio", Wire: OpenAI, BaseURL: "http://127.0.0.1:1234/v1", BaseURLEnv: "LM_BASE_URL",
		KeyEnv: []string{"LM_API_KEY"}, KeyOptional: true, DefaultModel: "openai/gpt-oss-20b", ContextLength: 131_072},
}

// aliases maps Hermes's other spellings to a slug here.
var aliases = map[string]string{"openai-api": "openai", "vercel": "ai-gateway", "google": "gemini", "glm": "zai", "kimi": "kimi-coding"}

// All returns every preset in menu order (a copy).
func All() []Preset {
	out := make([]Preset, len(all))
	copy(out, all[:])
	return out
}

// Slugs returns the preset slugs in menu order.
func Slugs() []string {
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.Slug
	}
	return out
}

// Canonical returns the slug name stands for: lower-cased, trimmed, with
// Hermes's aliases (openai-api → openai) applied. Unknown names come back
// lower-cased.
func Canonical(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		return a
	}
	return n
}

// Lookup returns the preset of slug (or an alias of it).
func Lookup(slug string) (Preset, bool) {
	n := Canonical(slug)
	for _, p := range all {
		if p.Slug == n {
			return p, true
		}
	}
	return Preset{}, false
}

// Key returns the first non-empty variable of KeyEnv that getenv gives,
// and its name; "", "" when none is set.
func (p Preset) Key(getenv func(string) string) (value, name string) {
	for _, k := range p.KeyEnv {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v, k
		}
	}
	return "", ""
}

// AutoKey reports whether a variable that selects this provider on its own
// (KeyEnv without NoAutoKeys) is set.
func (p Preset) AutoKey(getenv func(string) string) bool {
	for _, k := range p.KeyEnv {
		if !contains(p.NoAutoKeys, k) && strings.TrimSpace(getenv(k)) != "" {
			return true
		}
	}
	return false
}

// URL returns the base URL: the BaseURLEnv variable when set, else BaseURL.
func (p Preset) URL(getenv func(string) string) string {
	if p.BaseURLEnv != "" {
		if v := strings.TrimSpace(getenv(p.BaseURLEnv)); v != "" {
			return v
		}
	}
	return p.BaseURL
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
