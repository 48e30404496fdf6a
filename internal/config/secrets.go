package config

import (
	"fmt"
	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hermes-go/hermes/internal/llm/providers/preset"
	"github.com/hermes-go/hermes/internal/secret"
)

// IsSecretKey reports whether a key or variable name holds a secret; it
// is secret.IsName, the one rule shared with the backends and redaction
// (so "model.api_key", OPENAI_API_KEY and FAL_KEY are).
func IsSecretKey(key string) bool { return secret.IsName(key) }

// MaskSecret hides a secret for display: "****" plus its last 4 characters
// when it is at least 12 long (so "sk-...abcd" shows as "****abcd"), else
// just "****". An empty value stays empty.
func MaskSecret(v string) string {
	if v == "" {
		return ""
	}
	if len(v) >= 12 {
		return "****" + v[len(v)-4:]
	}
	return "****"
}

// envName matches an environment variable name as written in .env.
var envName = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsEnvKey reports whether key is an environment variable name (all
// upper case, no dots, e.g. OPENAI_API_KEY); Set and Unset store such keys
// in .env.
func IsEnvKey(key string) bool {
	return envName().MatchString(key) && strings.ToUpper(key) == key
}

// dotEnvLine matches "NAME=..." or "export NAME=..." and captures NAME.
var dotEnvLine = lazyregexp.New(`^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=`)

// setDotEnv sets (value != nil) or removes (value == nil) NAME in the .env
// file at path, keeping every other line as it was. It reports whether the
// file changed. The file is rewritten atomically with mode 0600.
func setDotEnv(path, name string, value *string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return false, readError(path, err)
	}
	text := string(b)
	var lines []string
	if text != "" {
		lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	var out []string
	found := false
	for _, line := range lines {
		m := dotEnvLine().FindStringSubmatch(line)
		if m == nil || m[1] != name {
			out = append(out, line)
			continue
		}
		if value != nil && !found {
			out = append(out, name+"="+quoteDotEnv(*value))
		}
		found = true
	}
	if !found {
		if value == nil {
			return false, nil
		}
		out = append(out, name+"="+quoteDotEnv(*value))
	}
	content := strings.Join(out, "\n")
	if content != "" {
		content += "\n"
	}
	if err := writeFileAtomic(path, []byte(content), 0o600); err != nil {
		return false, err
	}
	return true, nil
}

// plainDotEnv matches values that need no quotes in .env.
var plainDotEnv = lazyregexp.New(`^[A-Za-z0-9_./:@+,%=-]*$`)

// quoteDotEnv writes value so that godotenv reads it back unchanged:
// unquoted when safe, else single-quoted (literal), else double-quoted with
// \\, \", \$ and \n escapes.
func quoteDotEnv(value string) string {
	if plainDotEnv().MatchString(value) {
		return value
	}
	if !strings.ContainsAny(value, "'\n\r") {
		return "'" + value + "'"
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(value) + `"`
}

// writeFileAtomic replaces a config file (config.yaml, .env) through
// atomicfile: an existing file keeps its permissions, except that .env
// never becomes readable by others.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
		if filepath.Base(path) == ".env" {
			perm &= 0o600
		}
	}
	return atomicfile.Write(path, data, perm)
}

// ProviderKeyEnv lists, per preset provider, the environment variables
// that can hold its API key, in order of preference (Hermes
// "environment-variables.md", package preset). The custom provider uses
// model.api_key.
func ProviderKeyEnv(provider string) []string {
	if p, ok := preset.Lookup(provider); ok {
		return append([]string(nil), p.KeyEnv...)
	}
	return nil
}

// Masked returns a copy of the effective config with every secret key
// (IsSecretKey, e.g. model.api_key) replaced by MaskSecret of its value,
// for display.
func (l *Loaded) Masked() Config {
	c := l.Config
	s := l.schema
	if s == nil {
		s = newSchema()
	}
	v := reflect.ValueOf(&c).Elem()
	for k, f := range s {
		if f.section || f.typ.Kind() != reflect.String || !IsSecretKey(k) {
			continue
		}
		fv := v.FieldByIndex(f.index)
		fv.SetString(MaskSecret(fv.String()))
	}
	if len(c.MCPServers) > 0 {
		c.MCPServers = maskMCP(c.MCPServers)
	}
	return c
}

// maskMCP masks every env and header value of mcp_servers (they may hold
// credentials under any name).
func maskMCP(in map[string]MCPServer) map[string]MCPServer {
	out := make(map[string]MCPServer, len(in))
	for name, srv := range in {
		for _, m := range []*map[string]string{&srv.Env, &srv.Headers} {
			if *m == nil {
				continue
			}
			masked := make(map[string]string, len(*m))
			for k, v := range *m {
				masked[k] = MaskSecret(v)
			}
			*m = masked
		}
		out[name] = srv
	}
	return out
}

// withLock runs fn while holding an exclusive flock(2) on
// HERMES_HOME/.config.lock, so that two `hermes config set` processes
// editing the same file do not lose each other's change.
func withLock(home string, fn func() error) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", home, err)
	}
	f, err := os.OpenFile(filepath.Join(home, ".config.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lock %s: %w", home, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", home, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}
