package llm

import (
	"errors"
	"net/http"
	"strings"
)

// FallsBack reports whether err is a model-call failure that the next
// provider of a fallback chain may not share, so the turn should move on
// to it (Hermes "fallback-providers.md"): a 429 or 5xx that survived the
// retries, 401/403 (the key), 404 or a "model not found" answer (the
// model), and a provider that cannot be reached. It is false for
// cancellation, a prompt too long for the context window (compression
// handles it) and other request faults (400), which any provider would
// reject alike.
func FallsBack(err error) bool {
	var ae *APIError
	if err == nil || !errors.As(err, &ae) || ae.ContextOverflow {
		return false
	}
	switch {
	case ae.Retryable:
		return true
	case ae.StatusCode == http.StatusUnauthorized, ae.StatusCode == http.StatusForbidden,
		ae.StatusCode == http.StatusNotFound, ae.StatusCode == http.StatusPaymentRequired:
		return true
	}
	return modelNotFound(ae.Message)
}

// modelNotFound reports whether a provider's error message says the
// model does not exist (OpenAI "model_not_found", "The model `x` does not
// exist", OpenRouter "not a valid model ID", Ollama "model 'x' not found").
func modelNotFound(msg string) bool {
	m := strings.ToLower(msg)
	if strings.Contains(m, "model_not_found") || strings.Contains(m, "not a valid model") {
		return true
	}
	return strings.Contains(m, "model") && (strings.Contains(m, "not found") || strings.Contains(m, "does not exist"))
}

// FallbackError is the error of a turn whose every provider failed: Tried
// names each provider the turn used, in order ("openrouter/model-a"), and
// Err is the last failure. It unwraps to Err, so *APIError checks still
// see the last provider's answer.
type FallbackError struct {
	Tried []string
	Err   error
}

func (e *FallbackError) Error() string {
	return "every configured provider failed (tried " + strings.Join(e.Tried, ", ") + "); the last error: " + e.Err.Error()
}

func (e *FallbackError) Unwrap() error { return e.Err }
