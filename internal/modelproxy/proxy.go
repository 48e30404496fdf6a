// Package modelproxy is `hermes proxy`: a local OpenAI-compatible endpoint
// (GET /v1/models, POST /v1/chat/completions streaming or not, POST
// /v1/responses; POST /v1/messages for Anthropic-wire providers) that
// forwards each request to the configured provider with its credential
// attached here, on the host, so a program that must not hold the key (a
// box, an editor, a script) can use the model (Hermes Agent `hermes proxy`).
//
// Callers present the proxy token ("Authorization: Bearer TOKEN" or
// "x-api-key: TOKEN"), compared in constant time. The provider's key is
// never sent to a caller: request headers are rebuilt from an allow list,
// and error bodies from the provider have the key replaced. Bodies are
// bounded (Config.MaxBody) and each forwarded request has a deadline
// (Config.Timeout). GET /status (token required) reports the counts.
//
// The handler is plain net/http; Serve takes the listener, so a shared
// listener guard can wrap either.
package modelproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/httpguard"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// Defaults of Config.
const (
	DefaultMaxBody = 16 << 20         // bytes of one request body
	DefaultTimeout = 15 * time.Minute // one forwarded request, stream included
	// maxErrorBody bounds an upstream error body read for redaction.
	maxErrorBody = 1 << 20
)

// Config configures a Proxy.
type Config struct {
	// Endpoint is the provider requests go to, with its credential.
	Endpoint providers.Endpoint
	// Token is what callers must present; at least 16 bytes.
	Token string
	// Client calls the provider (default: a client with a 5-minute
	// response-header timeout and no overall timeout, for streams).
	Client *http.Client
	// MaxBody bounds a request body in bytes (default DefaultMaxBody).
	MaxBody int64
	// Timeout bounds one forwarded request end to end (default DefaultTimeout).
	Timeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Stats are the proxy's counters since it started.
type Stats struct {
	Provider     string    `json:"provider"`
	Label        string    `json:"label"`
	Upstream     string    `json:"upstream"`
	Model        string    `json:"model"`
	Started      time.Time `json:"started"`
	Requests     int64     `json:"requests"`
	Failed       int64     `json:"failed"`
	Unauthorized int64     `json:"unauthorized"`
	InFlight     int64     `json:"in_flight"`
}

// Proxy forwards authorised requests to one provider.
type Proxy struct {
	cfg                                      Config
	token                                    [sha256.Size]byte
	started                                  time.Time
	requests, failed, unauthorized, inFlight atomic.Int64
}

// New checks cfg and returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	if len(cfg.Token) < 16 {
		return nil, errors.New("proxy token too short: it must be at least 16 characters")
	}
	if cfg.Endpoint.BaseURL == "" {
		return nil, errors.New("proxy: no upstream base URL")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 5 * time.Minute
		cfg.Client = &http.Client{Transport: t}
	}
	return &Proxy{cfg: cfg, token: sha256.Sum256([]byte(cfg.Token)), started: cfg.Now()}, nil
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	ep := p.cfg.Endpoint
	return Stats{Provider: ep.Name, Label: ep.Label, Upstream: ep.BaseURL, Model: ep.Model, Started: p.started,
		Requests: p.requests.Load(), Failed: p.failed.Load(), Unauthorized: p.unauthorized.Load(), InFlight: p.inFlight.Load()}
}

// Handler returns the proxy's HTTP handler.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	openai := p.cfg.Endpoint.Wire == preset.OpenAI
	mux.HandleFunc("GET /v1/models", p.models)
	mux.HandleFunc("POST /v1/chat/completions", p.route(openai, "/chat/completions"))
	mux.HandleFunc("POST /v1/responses", p.route(openai, "/responses"))
	mux.HandleFunc("POST /v1/messages", p.route(!openai, "/v1/messages"))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, p.Stats()) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path+
			" (the proxy serves GET /v1/models, POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, GET /status)")
	})
	return p.authorize(mux)
}

// authorize answers 401 unless the request carries the token.
func (p *Proxy) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given := r.Header.Get("x-api-key")
		if a := r.Header.Get("Authorization"); given == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			given = strings.TrimSpace(a[7:])
		}
		sum := sha256.Sum256([]byte(given))
		if given == "" || subtle.ConstantTimeCompare(sum[:], p.token[:]) != 1 {
			p.unauthorized.Add(1)
			apiError(w, http.StatusUnauthorized, "invalid_api_key",
				"missing or wrong proxy token: send the token `hermes proxy start` printed as the API key (Authorization: Bearer TOKEN)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// route forwards to upstreamPath when the provider's wire serves it.
func (p *Proxy) route(served bool, upstreamPath string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !served {
			ep := p.cfg.Endpoint
			apiError(w, http.StatusNotFound, "unsupported_endpoint", fmt.Sprintf(
				"%s is not served for provider %s, which speaks the %s wire", r.URL.Path, ep.Name, ep.Wire))
			return
		}
		p.forward(w, r, upstreamPath)
	}
}

// models lists the provider's models: its GET /models for OpenAI-wire
// providers, else the model in use.
func (p *Proxy) models(w http.ResponseWriter, r *http.Request) {
	if p.cfg.Endpoint.Wire == preset.OpenAI {
		p.forward(w, r, "/models")
		return
	}
	p.requests.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": p.cfg.Endpoint.Model, "object": "model", "owned_by": p.cfg.Endpoint.Name}}})
}

// forward sends the request to the provider with the credential attached
// and copies the answer back, flushing as it arrives (SSE streams).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, upstreamPath string) {
	p.requests.Add(1)
	p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		if body, err = p.readBody(w, r); err != nil {
			p.failed.Add(1)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.Timeout)
	defer cancel()
	req, err := p.upstreamRequest(ctx, r, upstreamPath, body)
	if err != nil {
		p.failed.Add(1)
		apiError(w, http.StatusInternalServerError, "proxy_error", err.Error())
		return
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		p.failed.Add(1)
		apiError(w, http.StatusBadGateway, "upstream_unreachable", p.redact(fmt.Sprintf("%s did not answer: %v", p.cfg.Endpoint.Name, unwrapURLError(err))))
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Cache-Control", "Retry-After", "X-Request-Id", "Request-Id"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	if resp.StatusCode >= 400 {
		p.failed.Add(1)
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write([]byte(p.redact(string(b))))
		return
	}
	w.WriteHeader(resp.StatusCode)
	copyFlushing(w, resp.Body)
}

// readBody reads a bounded JSON object body and fills "model" when the
// caller left it out; it answers 400 or 413 itself on error.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body over %d bytes", p.cfg.MaxBody))
		} else {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "reading the request body: "+err.Error())
		}
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the request body must be a JSON object")
		return nil, errors.New("not a JSON object")
	}
	if m, ok := obj["model"]; !ok || string(m) == `""` || string(m) == "null" {
		obj["model"], _ = json.Marshal(p.cfg.Endpoint.Model)
		return json.Marshal(obj)
	}
	return b, nil
}

// forwardedHeaders are the request headers passed to the provider; every
// other header (the caller's Authorization, cookies) stays here.
var forwardedHeaders = []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "OpenAI-Beta"}

// upstreamRequest builds the provider request with the credential.
func (p *Proxy) upstreamRequest(ctx context.Context, r *http.Request, path string, body []byte) (*http.Request, error) {
	ep := p.cfg.Endpoint
	u := strings.TrimSuffix(ep.BaseURL, "/") + path
	if r.URL.RawQuery != "" && r.Method == http.MethodGet {
		u += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for _, h := range forwardedHeaders {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	switch {
	case ep.Wire == preset.Anthropic && ep.APIKey != "":
		req.Header.Set("x-api-key", ep.APIKey)
	case ep.Wire == preset.Anthropic && ep.AuthToken != "":
		req.Header.Set("Authorization", "Bearer "+ep.AuthToken)
	case ep.APIKey != "":
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}
	if ep.Wire == preset.Anthropic && req.Header.Get("Anthropic-Version") == "" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	return req, nil
}

// redact replaces the provider's credentials in s.
func (p *Proxy) redact(s string) string {
	for _, k := range []string{p.cfg.Endpoint.APIKey, p.cfg.Endpoint.AuthToken} {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// copyFlushing copies src to w, flushing after every read so server-sent
// events reach the caller as the provider sends them.
func copyFlushing(w http.ResponseWriter, src io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// unwrapURLError drops *url.Error's "POST URL:" prefix.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// apiError writes an OpenAI-style error body.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": code, "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve serves h on ln until ctx ends, then shuts down, giving requests in
// flight up to grace to finish. The server has httpguard's header, idle
// and header-size bounds; wrap h in httpguard.BodyDeadline to bound body
// reads (a ReadTimeout would cut streams).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := httpguard.NewServer(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc
	return nil
}
