package local

import (
	"slices"
	"strings"
)

// secretNames are provider and infrastructure variables that never reach a
// command, whatever their shape (Hermes "security.md": the local terminal
// scrubs the agent's own credentials and infra vars).
var secretNames = []string{
	"OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
	"GITHUB_TOKEN", "GH_TOKEN", "SUDO_PASSWORD", "API_KEY", "TOKEN", "SECRET",
}

// secretSuffixes and secretInfixes classify variable names that hold
// credentials: *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD* and friends.
var (
	secretSuffixes = []string{"_API_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_ACCESS_KEY", "_PRIVATE_KEY", "_SECRET_KEY", "_AUTH_KEY"}
	secretInfixes  = []string{"PASSWORD", "PASSWD", "SECRET", "CREDENTIAL"}
)

// IsSecretName reports whether an environment variable name looks like one
// of the agent's own secrets or infrastructure variables: a provider key
// (OPENAI_API_KEY...), any *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*,
// *CREDENTIAL*, or a HERMES_* variable. The match is case-insensitive.
func IsSecretName(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), "HERMES_") || isCredentialName(name)
}

// isCredentialName reports whether name looks like it holds a credential.
func isCredentialName(name string) bool {
	n := strings.ToUpper(name)
	if slices.Contains(secretNames, n) {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range secretInfixes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
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
		if len(value) >= minSecretLen && isCredentialName(name) {
			secretValues = append(secretValues, value)
		}
	}
	return kept, secretValues
}
