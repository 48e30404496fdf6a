// Package config loads HERMES_HOME/config.yaml and .env with the keys,
// defaults and precedence of Hermes Agent ("configuration.md"):
// flags > config.yaml > environment and .env > built-in defaults.
package config

// Config is the typed view of config.yaml. Field names follow the Hermes
// keys; yaml tags are the exact key names.
type Config struct {
	Model       ModelConfig       `yaml:"model"`
	Agent       AgentConfig       `yaml:"agent"`
	Terminal    TerminalConfig    `yaml:"terminal"`
	Approvals   ApprovalsConfig   `yaml:"approvals"`
	Memory      MemoryConfig      `yaml:"memory"`
	Skills      SkillsConfig      `yaml:"skills"`
	Compression CompressionConfig `yaml:"compression"`
	// Auxiliary chooses the models of side tasks (titles, compression
	// summaries, vision); each defaults to the main model.
	Auxiliary AuxiliaryConfig `yaml:"auxiliary"`
	Toolsets  []string        `yaml:"toolsets"`
	// PlatformToolsets chooses the toolsets of one platform's sessions
	// (Hermes "platform_toolsets": cli, acp, api_server, telegram, discord,
	// slack, cron), instead of toolsets. --toolsets overrides both.
	PlatformToolsets map[string][]string `yaml:"platform_toolsets"`
	Web              WebConfig           `yaml:"web"`
	Browser          BrowserConfig       `yaml:"browser"`
	Security         SecurityConfig      `yaml:"security"`
	// ContextFileMaxChars caps a project context file (AGENTS.md, ...) in
	// the system prompt, in characters; 0 = 20,000 (Hermes
	// "context_file_max_chars").
	ContextFileMaxChars int `yaml:"context_file_max_chars"`
	// MCPServers are the MCP servers whose tools sessions get, by name
	// (Hermes "mcp_servers"; see MCPServer).
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
	// UnauthorizedDMBehavior is what the gateway does with a direct
	// message from an unknown user: pair (default: a pairing code the
	// operator approves with `hermes pairing approve`) or ignore.
	UnauthorizedDMBehavior string `yaml:"unauthorized_dm_behavior"`
	// FallbackProviders are the providers a turn continues on, in order,
	// when the model call fails in a way a retry cannot fix (see
	// FallbackProvider); FallbackModel is Hermes's older single entry.
	FallbackProviders []FallbackProvider `yaml:"fallback_providers"`
	// Delegation configures delegate_task's subagents.
	Delegation DelegationConfig `yaml:"delegation"`
	// CodeExecution bounds execute_code's scripts.
	CodeExecution CodeExecutionConfig `yaml:"code_execution"`
	FallbackModel *FallbackProvider   `yaml:"fallback_model"`
	// Database chooses where sessions live (Hermes "database").
	Database DatabaseConfig `yaml:"database"`
	// Messaging configures the send_message tool.
	Messaging MessagingConfig `yaml:"messaging"`
}

// MessagingConfig is the messaging: section. A session's send_message
// reaches its own chat, the platforms' home channels
// (<PLATFORM>_HOME_CHANNEL) and AllowedTargets.
type MessagingConfig struct {
	// AllowedTargets are further chats any session may message, as
	// "<platform>:<chat_id>[:<thread_id>]" (cron's deliver form).
	AllowedTargets []string `yaml:"allowed_targets"`
}

// DatabaseConfig is the database: section: the session store.
type DatabaseConfig struct {
	// Backend is sqlite (default: HERMES_HOME/state.db) or postgres.
	Backend string `yaml:"backend"`
	// URL is the PostgreSQL URL when HERMES_DATABASE_URL is not set
	// (prefer the variable, or ${VAR}: the URL may hold a password).
	URL string `yaml:"url"`
	// Schema holds hermes's tables in PostgreSQL ("" = hermes).
	Schema string `yaml:"schema"`
	// LeaseSeconds is the leader lease of chat platforms that allow one
	// consumer per bot (Telegram long polling, Discord's gateway) when
	// replicas share PostgreSQL: a dead leader is replaced within about
	// 1.25 × this (0 = 15).
	LeaseSeconds int `yaml:"lease_seconds"`
}

// ModelConfig is the model: section.
type ModelConfig struct {
	Default       string `yaml:"default"`  // model id; alias key "model"
	Provider      string `yaml:"provider"` // openrouter, openai, anthropic, custom, replay
	BaseURL       string `yaml:"base_url"`
	APIKey        string `yaml:"api_key"`
	APIMode       string `yaml:"api_mode"` // chat_completions | anthropic_messages
	ContextLength int    `yaml:"context_length"`
	MaxTokens     int    `yaml:"max_tokens"`
	// RequestTimeout is the longest wait, in seconds, from sending a model
	// request to its first streamed data (0 = 300).
	RequestTimeout int `yaml:"request_timeout"`
	// StreamIdleTimeout is the longest wait, in seconds, between two pieces
	// of a streamed answer (0 = 120).
	StreamIdleTimeout int `yaml:"stream_idle_timeout"`
	// SupportsVision says whether the model accepts images (browser_vision
	// screenshots); unset = guessed from the model id (Hermes
	// providers.<id>.models.<m>.supports_vision).
	SupportsVision *bool `yaml:"supports_vision"`
}

// WebConfig is the web: section (web_search, web_extract).
type WebConfig struct {
	// Backend is the default backend of both web tools; SearchBackend
	// overrides it for web_search: searxng, brave, tavily, exa or
	// firecrawl ("" = the first whose key is set).
	Backend       string `yaml:"backend"`
	SearchBackend string `yaml:"search_backend"`
}

// BrowserConfig is the browser: section (the browser tools).
type BrowserConfig struct {
	// InactivityTimeout closes a session's Chromium after this many idle
	// seconds (0 = 120; negative = never).
	InactivityTimeout int `yaml:"inactivity_timeout"`
	// CommandTimeout bounds one browser action, in seconds (0 = 30).
	CommandTimeout int `yaml:"command_timeout"`
}

// SecurityConfig is the security: section (the keys hermes reads).
type SecurityConfig struct {
	// AllowPrivateURLs lets web_extract read loopback and private
	// addresses from the host (local backend; the box's gate has its own
	// allowlist).
	AllowPrivateURLs bool `yaml:"allow_private_urls"`
}

// AgentConfig is the agent: section.
type AgentConfig struct {
	MaxTurns        int    `yaml:"max_turns"` // 0 = default (90)
	ReasoningEffort string `yaml:"reasoning_effort"`
	SystemPrompt    string `yaml:"system_prompt"`
	// DisabledToolsets are removed from every platform's toolsets last
	// (Hermes "agent.disabled_toolsets"): toolset names or tool names.
	DisabledToolsets []string `yaml:"disabled_toolsets"`
	// ClarifyTimeout is how long, in seconds, a clarify question waits
	// for the person's answer (0 = 3600, as Hermes).
	ClarifyTimeout int `yaml:"clarify_timeout"`
}

// TerminalConfig is the terminal: section.
type TerminalConfig struct {
	Backend        string   `yaml:"backend"` // TerminalBackends()
	Cwd            string   `yaml:"cwd"`
	Timeout        int      `yaml:"timeout"` // seconds, default 180
	EnvPassthrough []string `yaml:"env_passthrough"`
	// LocalSandbox is how the kernel confines local-backend commands:
	// workspace-write (default) | read-only | off.
	LocalSandbox string `yaml:"local_sandbox"`
	// WritablePaths are directories (absolute or ~/) that local commands
	// may write besides the workspace and the temp dir (workspace-write).
	WritablePaths []string `yaml:"writable_paths"`
	// ProtectedPaths are workspace-relative paths (a trailing "/" = the
	// whole directory) that a box with a bind workspace and the guarded
	// local commands may not write: files that make the host run code
	// later (internal/protect; default protect.Defaults()). [] = none.
	ProtectedPaths      []string         `yaml:"protected_paths"`
	ContainerCPU        float64          `yaml:"container_cpu"`        // cores, default 1
	ContainerMemory     int              `yaml:"container_memory"`     // MiB, default 5120
	ContainerDisk       int              `yaml:"container_disk"`       // MiB, default 51200
	ContainerPersistent *bool            `yaml:"container_persistent"` // default true
	LifetimeSeconds     int              `yaml:"lifetime_seconds"`     // default 300
	BoxImage            string           `yaml:"box_image"`            // host | dir | tarball
	BoxWorkspace        string           `yaml:"box_workspace"`        // bind | overlay
	BoxPids             int              `yaml:"box_pids"`             // default 1024
	BoxNetwork          BoxNetworkConfig `yaml:"box_network"`
	// BoxInsecureRegistries are registries (host or host:port) that OCI
	// images for box_image may be pulled from over plain HTTP; loopback
	// registries always may (internal/ociimage).
	BoxInsecureRegistries []string `yaml:"box_insecure_registries"`
	// SSH backend (Hermes keys; TERMINAL_SSH_HOST/USER/PORT/KEY).
	SSHHost string `yaml:"ssh_host"`
	SSHUser string `yaml:"ssh_user"`
	SSHPort int    `yaml:"ssh_port"` // default 22
	SSHKey  string `yaml:"ssh_key"`  // private key file; "" = ssh-agent, then ~/.ssh/id_*
	// Docker backend (Hermes keys; HERMES_DOCKER_BINARY=podman for Podman).
	DockerImage     string            `yaml:"docker_image"`      // default nikolaik/python-nodejs:python3.11-nodejs20
	DockerNetwork   *bool             `yaml:"docker_network"`    // default true
	DockerEnv       map[string]string `yaml:"docker_env"`        // literal variables for the container
	DockerExtraArgs []string          `yaml:"docker_extra_args"` // passed to docker run before the image
	// VercelRuntime is the vercel_sandbox runtime: node24 (default) | node22 | python3.13.
	VercelRuntime string `yaml:"vercel_runtime"`
}

// BoxNetworkConfig is terminal.box_network.
type BoxNetworkConfig struct {
	Allow []string `yaml:"allow"` // hosts, *.suffix patterns, CIDRs
	Deny  []string `yaml:"deny"`
	// CAFile is a PEM bundle of private CAs added to the system roots when
	// the egress gate verifies upstreams of intercepted (secret) hosts.
	CAFile string `yaml:"ca_file"`
}

// ApprovalsConfig is the approvals: section.
type ApprovalsConfig struct {
	Mode             string   `yaml:"mode"` // manual | smart | off
	Timeout          int      `yaml:"timeout"`
	Deny             []string `yaml:"deny"`
	CommandAllowlist []string `yaml:"command_allowlist"`
}

// MemoryConfig is the memory: section.
type MemoryConfig struct {
	MemoryEnabled      *bool `yaml:"memory_enabled"`
	UserProfileEnabled *bool `yaml:"user_profile_enabled"`
	MemoryCharLimit    int   `yaml:"memory_char_limit"` // default 2200
	UserCharLimit      int   `yaml:"user_char_limit"`   // default 1375
	NudgeInterval      int   `yaml:"nudge_interval"`    // tool calls in a turn that trigger the self-improvement review; default 10, 0 = off
}

// SkillsConfig is the skills: section.
type SkillsConfig struct {
	ExternalDirs          []string `yaml:"external_dirs"`
	CreationNudgeInterval int      `yaml:"creation_nudge_interval"`
}

// CompressionConfig is the compression: section.
type CompressionConfig struct {
	Enabled       *bool   `yaml:"enabled"`
	Threshold     float64 `yaml:"threshold"` // fraction of the context window, default 0.50
	TargetRatio   float64 `yaml:"target_ratio"`
	ProtectFirstN int     `yaml:"protect_first_n"` // default 3
	ProtectLastN  int     `yaml:"protect_last_n"`  // default 20
	// Summary* are Hermes's keys before auxiliary.compression (config
	// version 17); auxiliary.compression wins when it names a model.
	SummaryModel    string `yaml:"summary_model"`
	SummaryProvider string `yaml:"summary_provider"`
	SummaryBaseURL  string `yaml:"summary_base_url"`
}

// DelegationConfig is the delegation: section (Hermes "delegation.md"; the
// keys hermes reads).
type DelegationConfig struct {
	// Provider, Model, BaseURL and APIKey choose the subagents' model, as
	// an auxiliary task's keys do (all empty = the parent's model; a model
	// alone = that model on the parent's provider; the parent's key never
	// goes to another provider or endpoint).
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	// MaxConcurrentChildren bounds the subagents of one delegate_task
	// batch that run at once (0 = 3).
	MaxConcurrentChildren int `yaml:"max_concurrent_children"`
	// MaxSpawnDepth is how many levels of subagents may exist below a
	// session: 1 (default) = children cannot delegate; at most 2 here.
	MaxSpawnDepth int `yaml:"max_spawn_depth"`
	// MaxIterations bounds each subagent's model calls with tools (0 = 50).
	MaxIterations int `yaml:"max_iterations"`
	// DefaultToolsets are a child's toolsets when delegate_task names none
	// (empty = the parent's).
	DefaultToolsets []string `yaml:"default_toolsets"`
}

// CodeExecutionConfig is the code_execution: section (Hermes
// "configuration.md"; the keys hermes reads).
type CodeExecutionConfig struct {
	// Timeout is a script's wall-clock limit in seconds (0 = 300); the
	// script and its children are killed when it passes.
	Timeout int `yaml:"timeout"`
	// MaxToolCalls bounds the tool calls of one script (0 = 50); later
	// calls get an error result.
	MaxToolCalls int `yaml:"max_tool_calls"`
}
