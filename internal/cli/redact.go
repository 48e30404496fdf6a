package cli

import (
	"errors"
	"sort"
	"strings"

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

// redactor removes the agent's own secrets from text: provider keys and
// tokens from the environment and HERMES_HOME/.env, model.api_key, and the
// real values of box secrets (`hermes secrets`), each with its base64,
// hex, reversed and URL-encoded forms (secret.Forms). It is a last line of
// defence: the local guard and the box are what keep secrets from tools.
type redactor struct {
	values   []string
	replacer *strings.Replacer
}

// newRedactor collects the secret values visible to this process.
func newRedactor(cfg *config.Loaded, environ []string, passthrough []string, home string) *redactor {
	_, values := local.ScrubEnv(environ, passthrough)
	values = append(values, cfg.Config.Model.APIKey)
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
	seen := map[string]bool{}
	var keep []string
	for _, v := range values {
		if len(v) < minSecretLen {
			continue
		}
		for _, f := range secret.Forms(v) { // v, base64, hex, reversed, URL-encoded
			if !seen[f] {
				seen[f] = true
				keep = append(keep, f)
			}
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(keep, func(i, j int) bool { return len(keep[i]) > len(keep[j]) })
	pairs := make([]string, 0, 2*len(keep))
	for _, v := range keep {
		pairs = append(pairs, v, Redacted)
	}
	return &redactor{values: keep, replacer: strings.NewReplacer(pairs...)}
}

// Redact returns s with every secret value replaced by [REDACTED].
func (r *redactor) Redact(s string) string {
	if r == nil || len(r.values) == 0 {
		return s
	}
	return r.replacer.Replace(s)
}

// redactedError keeps an error's identity (errors.Is/As) while its message
// has the secrets removed.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactError returns err with secrets removed from its message (nil stays
// nil). An *ExitError keeps its code; its inner error is redacted.
func (r *redactor) RedactError(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.Code, Silent: ee.Silent, Err: r.RedactError(ee.Err)}
	}
	if msg := r.Redact(err.Error()); msg != err.Error() {
		return &redactedError{err: err, msg: msg}
	}
	return err
}
