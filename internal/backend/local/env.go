package local

import (
	"slices"
	"strings"

	"github.com/hermes-go/hermes/internal/secret"
)

// IsSecretName reports whether an environment variable name is one of the
// agent's own secrets (secret.IsName: OPENAI_API_KEY, FAL_KEY, any
// *_TOKEN...) or an infrastructure variable of hermes (HERMES_*); such
// variables never reach a command. The match is case-insensitive.
func IsSecretName(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), "HERMES_") || secret.IsName(name)
}

// minSecretLen is the shortest value treated as a secret to redact; shorter
// values ("1", "true") would turn ordinary output into noise.
const minSecretLen = 6

// ScrubEnv splits environ ("NAME=value" entries, as os.Environ returns) into
// the entries a command may see and the secret values that were removed.
// Names in passthrough (terminal.env_passthrough, case-sensitive) are kept
// even when they look secret. secretValues holds the values of removed
// credential-named variables at least 6 bytes long, for redacting output.
func ScrubEnv(environ []string, passthrough []string) (kept []string, secretValues []string) {
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if slices.Contains(passthrough, name) || !IsSecretName(name) {
			kept = append(kept, kv)
			continue
		}
		if len(value) >= minSecretLen && secret.IsName(name) {
			secretValues = append(secretValues, value)
		}
	}
	return kept, secretValues
}
