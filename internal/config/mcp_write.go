package config

import (
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/hermes-go/hermes/internal/lazyregexp"
	"github.com/hermes-go/hermes/internal/secret"
)

// mcpServerName is what a server name may hold: it becomes part of tool
// names, toolsets and .env variable names.
var mcpServerName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// CheckMCPServerName reports a server name that is not letters, digits,
// '_' and '-' (64 at most, starting with a letter or digit).
func CheckMCPServerName(name string) error {
	if !mcpServerName().MatchString(name) {
		return &Error{Key: "mcp_servers." + name, Msg: "a server name is letters, digits, _ and - (up to 64, starting with a letter or digit)"}
	}
	return nil
}

// MCPSecretEnvName is the .env variable that holds a secret env or header
// value of server name: MCP_<NAME>_<KEY>, upper case, other characters
// as '_'.
func MCPSecretEnvName(name, key string) string {
	up := strings.ToUpper("MCP_" + name + "_" + key)
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, up)
}

// SetMCPServer writes mcp_servers.<name> to config.yaml, replacing an
// entry of that name and keeping every other key and comment. Secret
// values written literally (env values with a credential name and header
// values other than Accept, Content-Type, User-Agent) go to .env as
// MCPSecretEnvName and config.yaml gets a ${...} reference, as
// `hermes config set` does for model.api_key. Both files are replaced
// atomically under the config lock.
func SetMCPServer(home, name string, srv MCPServer) error {
	if err := CheckMCPServerName(name); err != nil {
		return err
	}
	if err := srv.Check(name); err != nil {
		return err
	}
	return withLock(home, func() error {
		srv.Env = cloneMap(srv.Env)
		srv.Headers = cloneMap(srv.Headers)
		for k, v := range srv.Env {
			if secret.IsName(k) && v != "" && !isWholeVarRef(v) {
				if err := storeMCPSecret(home, name, k, v, srv.Env); err != nil {
					return err
				}
			}
		}
		for k, v := range srv.Headers {
			switch strings.ToLower(k) {
			case "accept", "content-type", "user-agent":
				continue
			}
			if v != "" && !isWholeVarRef(v) {
				if err := storeMCPSecret(home, name, k, v, srv.Headers); err != nil {
					return err
				}
			}
		}
		n := &yaml.Node{}
		if err := n.Encode(srv); err != nil {
			return &Error{Key: "mcp_servers." + name, Msg: err.Error()}
		}
		path := ConfigPath(home)
		doc, prefix, err := readForEdit(path)
		if err != nil {
			return err
		}
		if err := setIn(doc.Content[0], "", []string{"mcp_servers", name}, n); err != nil {
			return &Error{Path: path, Key: "mcp_servers." + name, Msg: err.Error()}
		}
		return writeConfig(path, doc, prefix)
	})
}

func storeMCPSecret(home, name, key, value string, into map[string]string) error {
	env := MCPSecretEnvName(name, key)
	if _, err := setDotEnv(DotEnvPath(home), env, &value); err != nil {
		return err
	}
	into[key] = "${" + env + "}"
	return nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// RemoveMCPServer removes mcp_servers.<name> from config.yaml (and the
// mcp_servers section when it becomes empty) and the .env secrets
// SetMCPServer stored for it. It reports whether the entry existed.
func RemoveMCPServer(home, name string, old MCPServer) (bool, error) {
	removed := false
	err := withLock(home, func() error {
		path := ConfigPath(home)
		if !exists(path) {
			return nil
		}
		doc, prefix, err := readForEdit(path)
		if err != nil {
			return err
		}
		if unsetIn(doc.Content[0], "", []string{"mcp_servers", name}) == nil {
			return nil
		}
		removed = true
		if err := writeConfig(path, doc, prefix); err != nil {
			return err
		}
		for _, m := range []map[string]string{old.Env, old.Headers} {
			for k := range m {
				if _, err := setDotEnv(DotEnvPath(home), MCPSecretEnvName(name, k), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return removed, err
}

// MarshalYAML writes sampling as a boolean.
func (s MCPSampling) MarshalYAML() (any, error) { return s.Enabled, nil }

// IsZero lets omitempty drop a disabled sampling.
func (s MCPSampling) IsZero() bool { return !s.Enabled }
