package config

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/hermes-go/hermes/internal/secret"
)

// MCP server defaults (Hermes "mcp-config-reference.md"), in seconds.
const (
	DefaultMCPTimeout        = 300
	DefaultMCPConnectTimeout = 60
)

// MCP trust levels (mcp_servers.<name>.trust).
const (
	MCPTrustFull      = "full"
	MCPTrustUntrusted = "untrusted"
)

// MCPServer is one mcp_servers.<name> entry of config.yaml (Hermes
// "mcp-config-reference.md"). A server is either a local program spoken
// to over stdio (Command, Args, Env) or a remote one over streamable HTTP
// with an SSE fallback (URL, Headers). ${VAR} references in any value are
// expanded at load time; Env and Headers values are treated as secrets
// (never logged, stored or shown to the model).
type MCPServer struct {
	// Command and Args start a stdio server.
	Command string   `yaml:"command,omitempty"`
	Args    []string `yaml:"args,omitempty"`
	// Env is added to the server's environment (which otherwise holds only
	// PATH, HOME, locale and temp-dir variables: no provider keys).
	Env map[string]string `yaml:"env,omitempty"`
	// URL is a streamable HTTP endpoint (SSE when it does not answer as
	// streamable HTTP); Headers are sent with every request.
	URL     string            `yaml:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Enabled false keeps the entry without connecting (default true).
	Enabled *bool `yaml:"enabled,omitempty"`
	// Timeout bounds one tool call, in seconds (0 = 300).
	Timeout int `yaml:"timeout,omitempty"`
	// ConnectTimeout bounds starting and initializing the server, in
	// seconds (0 = 60).
	ConnectTimeout int `yaml:"connect_timeout,omitempty"`
	// Tools filters the server's tools.
	Tools MCPTools `yaml:"tools,omitempty"`
	// Trust is full (default: tools run like built-in ones) or untrusted
	// (every tool call needs approval; denied headless unless --yolo).
	Trust string `yaml:"trust,omitempty"`
	// Host runs a stdio server on the host even with terminal.backend: box
	// (by default it runs inside the session's box).
	Host bool `yaml:"host,omitempty"`
	// Sampling lets the server ask the session's model for completions
	// (sampling/createMessage); refused unless enabled.
	Sampling MCPSampling `yaml:"sampling,omitempty"`
}

// MCPTools is mcp_servers.<name>.tools.
type MCPTools struct {
	// Include and Exclude are globs (fnmatch: *, ?, [...]) on the
	// server's own tool names. With Include set only matching tools are
	// offered; Exclude removes tools; a tool matching both is kept
	// (include wins).
	Include []string `yaml:"include,omitempty"`
	Exclude []string `yaml:"exclude,omitempty"`
	// Resources and Prompts false hide the resource and prompt utility
	// tools of a server that offers them (default true).
	Resources *bool `yaml:"resources,omitempty"`
	Prompts   *bool `yaml:"prompts,omitempty"`
}

// MCPSampling is mcp_servers.<name>.sampling: `true`/`false`, or Hermes'
// mapping form `{enabled: true, ...}` (other keys are ignored).
type MCPSampling struct {
	Enabled bool `yaml:"enabled,omitempty"`
}

// UnmarshalYAML accepts a boolean or a mapping with an enabled key.
func (s *MCPSampling) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&s.Enabled)
	}
	var m struct {
		Enabled bool `yaml:"enabled"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	s.Enabled = m.Enabled
	return nil
}

// IsEnabled reports whether the server should be connected.
func (s MCPServer) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// Stdio reports whether the server is a local program (Command set).
func (s MCPServer) Stdio() bool { return s.Command != "" }

// Untrusted reports whether the server's tool calls need approval.
func (s MCPServer) Untrusted() bool { return strings.EqualFold(s.Trust, MCPTrustUntrusted) }

// ToolAllowed applies Tools.Include / Tools.Exclude to a server tool name:
// include wins over exclude; with an include list, unmatched names are
// dropped.
func (s MCPServer) ToolAllowed(name string) bool {
	if matchAny(s.Tools.Include, name) {
		return true
	}
	if len(s.Tools.Include) > 0 {
		return false
	}
	return !matchAny(s.Tools.Exclude, name)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, err := path.Match(g, name); err == nil && ok {
			return true
		}
	}
	return false
}

// Check reports the first problem of the entry, naming the key at fault:
// neither or both of command and url, a url that is not http(s), an
// unknown trust, a negative timeout, a bad glob.
func (s MCPServer) Check(name string) error {
	key := "mcp_servers." + name
	if strings.TrimSpace(name) == "" {
		return &Error{Key: "mcp_servers", Msg: "a server needs a name"}
	}
	switch {
	case s.Command == "" && s.URL == "":
		return &Error{Key: key, Msg: "set command (a stdio server) or url (an HTTP server)"}
	case s.Command != "" && s.URL != "":
		return &Error{Key: key, Msg: "set either command or url, not both"}
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &Error{Key: key + ".url", Msg: fmt.Sprintf("%q is not an http(s) URL", s.URL)}
		}
	}
	if s.Trust != "" && !strings.EqualFold(s.Trust, MCPTrustFull) && !s.Untrusted() {
		return &Error{Key: key + ".trust", Msg: fmt.Sprintf("%q is not one of full, untrusted", s.Trust)}
	}
	if s.Timeout < 0 || s.ConnectTimeout < 0 {
		return &Error{Key: key, Msg: "timeout and connect_timeout are seconds and cannot be negative"}
	}
	for _, g := range append(append([]string(nil), s.Tools.Include...), s.Tools.Exclude...) {
		if _, err := path.Match(g, ""); err != nil {
			return &Error{Key: key + ".tools", Msg: fmt.Sprintf("bad glob %q: %v", g, err)}
		}
	}
	return nil
}

// SecretValues are the values of the entry that must never be shown: env
// values whose name holds a credential (secret.IsName: *_TOKEN,
// *_API_KEY, ...) and every header value but Accept, Content-Type and
// User-Agent (and the token of an "Authorization: Bearer TOKEN").
func (s MCPServer) SecretValues() []string {
	var out []string
	for k, v := range s.Env {
		if secret.IsName(k) {
			out = append(out, v)
		}
	}
	for k, v := range s.Headers {
		switch strings.ToLower(k) {
		case "accept", "content-type", "user-agent":
		default:
			out = append(out, v)
			if _, token, ok := strings.Cut(v, " "); ok { // "Bearer TOKEN": the token alone too
				out = append(out, strings.TrimSpace(token))
			}
		}
	}
	sort.Strings(out)
	return out
}
