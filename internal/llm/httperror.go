package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrorHints tells the error mapping what a person should change when a
// provider rejects a request. KeyFix is shown for 401/403 (for example
// "set OPENROUTER_API_KEY (or model.api_key in config.yaml)"); ModelFix for
// 404 and unknown-model errors.
type ErrorHints struct {
	KeyFix   string
	ModelFix string
}

// DefaultModelFix is the ModelFix used when a provider sets none.
const DefaultModelFix = "check the model name: model.default in config.yaml or --model"

// maxRetryAfter caps the delay taken from a Retry-After header (RFC 9110 §10.2.3).
const maxRetryAfter = 5 * time.Minute

// HTTPError maps an HTTP error answer of provider to an *APIError:
// 401/403 are fatal with hints.KeyFix, 404 fatal with hints.ModelFix,
// 408/409/425/429 and 5xx are Retryable with RetryAfter taken from the
// Retry-After header (seconds or HTTP date, capped at 5 minutes), and any
// status whose message says the prompt is too long sets ContextOverflow.
// now is used to turn an HTTP-date Retry-After into a delay.
func HTTPError(provider string, status int, message string, header http.Header, hints ErrorHints, now time.Time) *APIError {
	e := &APIError{Provider: provider, StatusCode: status, Message: strings.TrimSpace(message)}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Fix = hints.KeyFix
	case status == http.StatusNotFound:
		e.Fix = hints.ModelFix
		if e.Fix == "" {
			e.Fix = DefaultModelFix
		}
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooEarly,
		status == http.StatusTooManyRequests, status >= 500:
		e.Retryable = true
	}
	if header != nil {
		e.RetryAfter = ParseRetryAfter(header.Get("Retry-After"), now)
	}
	if IsContextOverflowMessage(message) {
		e.ContextOverflow = true
		e.Retryable = false
	}
	return e
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3: delay seconds
// or an HTTP date) and returns the delay, 0 when absent or unparseable,
// capped at 5 minutes.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		d = time.Duration(secs * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d < 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// IsContextOverflowMessage reports whether a provider error message says the
// prompt exceeds the model's context window (OpenAI context_length_exceeded,
// Anthropic "prompt is too long", llama.cpp "exceeds the available context
// size", OpenRouter "maximum context length").
func IsContextOverflowMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{
		"context_length_exceeded", "maximum context length", "context length", "context window",
		"prompt is too long", "too many tokens", "exceeds the available context", "reduce the length",
		"input is too long", "context_window_exceeded",
	} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// TransportError maps a failure to reach provider (connection refused or
// reset, timeout, truncated body) to a Retryable *APIError. It returns err
// unchanged when the caller's context was cancelled or err is already an
// *APIError, and nil for nil.
func TransportError(provider string, err error) error {
	if err == nil {
		return nil
	}
	var ae *APIError
	if errors.As(err, &ae) || errors.Is(err, context.Canceled) {
		return err
	}
	retryable := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
	var ne net.Error
	if errors.As(err, &ne) {
		retryable = true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		retryable = true
	}
	if !retryable {
		return err
	}
	return &APIError{Provider: provider, Message: "connection failed: " + err.Error(), Retryable: true,
		Refused: errors.Is(err, syscall.ECONNREFUSED)}
}

// StreamError builds the *APIError for an error object a provider sent
// inside a 200 stream. errType is the provider's error type or code
// (overloaded_error, rate_limit_error, server_error, 429, ...), message its
// text. Overload, rate-limit and server errors are Retryable.
func StreamError(provider, errType, message string) *APIError {
	if message == "" {
		message = errType
	}
	if message == "" {
		message = "the provider sent an error without a message"
	}
	e := &APIError{Provider: provider, Message: message}
	t := strings.ToLower(errType + " " + message)
	for _, s := range []string{"overloaded", "rate_limit", "rate limit", "server_error", "internal", "timeout", "529", "503", "502", "500", "429", "unavailable"} {
		if strings.Contains(t, s) {
			e.Retryable = true
			break
		}
	}
	if isClientErrorType(errType) {
		e.Retryable = false
	}
	if IsContextOverflowMessage(message) {
		e.ContextOverflow, e.Retryable = true, false
	}
	return e
}

// isClientErrorType reports whether a stream error's type names a fault
// of the request (OpenAI invalid_request_error, LiteLLM BadRequestError,
// Anthropic invalid_request_error, authentication and permission errors):
// repeating the same request cannot succeed.
func isClientErrorType(errType string) bool {
	t := strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(errType))
	for _, s := range []string{"badrequest", "invalidrequest", "authentication", "permission", "notfound", "unprocessable", "contextlength"} {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// ErrorBodyMessage extracts a readable message from an HTTP error body:
// error.message (OpenAI, OpenRouter, Anthropic), then message, then
// error as a string, else the body itself trimmed to 500 bytes.
func ErrorBodyMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		if len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		if v.Message != "" {
			return v.Message
		}
		if v.Detail != "" {
			return v.Detail
		}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// ErrorResponse reads and closes an HTTP error response (status >= 400)
// and maps it with HTTPError. It is meant for SDK middlewares, so that
// every provider reports HTTP errors the same way whatever the body holds.
func ErrorResponse(provider string, res *http.Response, hints ErrorHints, now time.Time) *APIError {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	return HTTPError(provider, res.StatusCode, ErrorBodyMessage(body), res.Header, hints, now)
}

// CheckResponse is the common body of the providers' SDK middlewares: it
// maps a transport error with TransportError and an HTTP error status
// (>= 400) with ErrorResponse, and passes a successful response through.
func CheckResponse(provider string, res *http.Response, err error, hints ErrorHints, now time.Time) (*http.Response, error) {
	if err != nil {
		return nil, TransportError(provider, err)
	}
	if res.StatusCode >= 400 {
		return nil, ErrorResponse(provider, res, hints, now)
	}
	if ct := strings.ToLower(res.Header.Get("Content-Type")); strings.Contains(ct, "text/html") {
		return nil, htmlResponse(provider, res)
	}
	return res, nil
}

// htmlTitle finds the <title> of an HTML page.
var htmlTitle = lazyregexp.New(`(?is)<title[^>]*>(.*?)</title>`)

// htmlResponse reads and closes a successful response that is an HTML page
// instead of a model stream (a wrong base URL pointing at a website, a
// captive portal or a proxy login page) and says what was received.
func htmlResponse(provider string, res *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	what := "an HTML page"
	if m := htmlTitle().FindSubmatch(body); m != nil {
		if t := strings.Join(strings.Fields(string(m[1])), " "); t != "" {
			what += fmt.Sprintf(" titled %q", truncateRunes(t, 100))
		}
	}
	fix := "check that the base URL is the API endpoint (for example https://openrouter.ai/api/v1 or http://localhost:11434/v1), not a web page"
	return &APIError{Provider: provider, StatusCode: res.StatusCode,
		Message: fmt.Sprintf("expected a model event stream but received %s (%s, %d bytes read)", what, res.Header.Get("Content-Type"), len(body)),
		Fix:     fix}
}

func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
