package session

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/secret"
)

// Redacted replaces a secret value in text shown to the model, stored in
// the session or printed.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value treated as a secret: shorter values
// (e.g. "1", "true") would redact ordinary text.
const minSecretLen = 8

// Redactor removes the agent's own secrets from text: provider keys and
// tokens from the environment and HERMES_HOME/.env, model.api_key, the
// env and header secrets of mcp_servers, and the
// real values of box secrets (`hermes secrets`), each with its base64,
// hex, reversed and URL-encoded forms (secret.Forms). It is a last line of
// defence: the local guard and the box are what keep secrets from tools.
// Add extends it (an ACP client's MCP server secrets); it is safe for
// concurrent use.
type Redactor struct {
	mu       sync.RWMutex
	values   []string
	replacer *strings.Replacer
}

// NewRedactor collects the secret values visible to this process.
func NewRedactor(cfg *config.Loaded, environ []string, passthrough []string, home string) *Redactor {
	_, values := local.ScrubEnv(environ, passthrough)
	values = append(values, cfg.Config.Model.APIKey)
	for _, task := range []config.AuxTask{config.AuxTitle, config.AuxCompression, config.AuxVision} {
		values = append(values, cfg.Config.Aux(task).APIKey)
	}
	for _, srv := range cfg.Config.MCPServers {
		values = append(values, srv.SecretValues()...)
	}
	for k, v := range cfg.DotEnv {
		if secret.IsName(k) {
			values = append(values, v)
		}
	}
	if stored, err := egress.LoadSecrets(home); err == nil {
		for _, s := range stored {
			values = append(values, s.Value)
		}
	}
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add makes values (and their encoded forms) secrets too; values shorter
// than 8 bytes are ignored.
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, v := range r.values {
		seen[v] = true
	}
	keep, grew := r.values, false
	for _, v := range values {
		if len(v) < minSecretLen {
			continue
		}
		for _, f := range secret.Forms(v) { // v, base64, hex, reversed, URL-encoded
			if !seen[f] {
				seen[f] = true
				keep = append(keep, f)
				grew = true
			}
		}
	}
	if !grew && r.replacer != nil {
		return
	}
	keep = slices.Clone(keep)
	// Longest first, so a secret containing another is replaced whole.
	sort.SliceStable(keep, func(i, j int) bool { return len(keep[i]) > len(keep[j]) })
	pairs := make([]string, 0, 2*len(keep))
	for _, v := range keep {
		pairs = append(pairs, v, Redacted)
	}
	r.values, r.replacer = keep, strings.NewReplacer(pairs...)
}

// Values are the secret values, longest first.
func (r *Redactor) Values() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.values
}

// Redact returns s with every secret value replaced by [REDACTED].
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep, n := r.replacer, len(r.values)
	r.mu.RUnlock()
	if n == 0 {
		return s
	}
	return rep.Replace(s)
}
