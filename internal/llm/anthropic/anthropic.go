// Package anthropic is the Anthropic Messages API provider, built on the
// official SDK github.com/anthropics/anthropic-sdk-go/v2 and its streaming
// decoder. Wire reference: https://docs.anthropic.com/en/api/messages-streaming
// (content blocks: text, thinking with signature_delta, redacted_thinking,
// tool_use with input_json_delta; error events inside a 200 stream).
package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/hermes-go/hermes/internal/llm"
)

// Config configures a Provider.
type Config struct {
	// Name is the provider slug used in errors (default "anthropic").
	Name string
	// BaseURL is the API root without /v1 (https://api.anthropic.com).
	BaseURL string
	// APIKey is sent as x-api-key (ANTHROPIC_API_KEY). It wins over AuthToken.
	APIKey string
	// AuthToken is sent as "Authorization: Bearer" (ANTHROPIC_AUTH_TOKEN)
	// when APIKey is empty.
	AuthToken string
	// HTTPClient is used for requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Hints name the env var or config key to fix in auth and model errors.
	Hints llm.ErrorHints
	// Now is the clock for Retry-After dates (default time.Now).
	Now func() time.Time
}

// Provider streams Messages API responses. It is safe for concurrent use;
// its only mutable state is a cache of tool definitions' wire JSON.
type Provider struct {
	cfg     Config
	service anthropic.MessageService
	tools   *toolCache
}

// New returns a Provider for cfg. The SDK's retries are disabled (llm.WithRetry
// retries) and no ANTHROPIC_* environment variable or profile is read.
func New(cfg Config) *Provider {
	if cfg.Name == "" {
		cfg.Name = "anthropic"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			res, err := next(req)
			return llm.CheckResponse(cfg.Name, res, err, cfg.Hints, cfg.Now())
		}),
	}
	switch {
	case cfg.APIKey != "":
		opts = append(opts, option.WithHeader("x-api-key", cfg.APIKey))
	case cfg.AuthToken != "":
		opts = append(opts, option.WithHeader("Authorization", "Bearer "+cfg.AuthToken))
	}
	return &Provider{cfg: cfg, service: anthropic.NewMessageService(opts...), tools: &toolCache{}}
}

// Name returns the provider slug.
func (p *Provider) Name() string { return p.cfg.Name }

// Stream starts a streaming Messages call. HTTP errors are returned here as
// *llm.APIError; errors later in the stream come from the Stream's Err.
func (p *Provider) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	sdk := p.service.NewStreaming(ctx, buildParams(req, p.tools))
	s := &stream{provider: p.cfg.Name, sdk: sdk, blocks: map[int64]*block{}}
	if !s.pull() && s.err != nil {
		_ = sdk.Close()
		return nil, s.err
	}
	return s, nil
}

type block struct {
	kind  string
	index int // tool-call index for tool_use blocks
	id    string
	name  string
	args  strings.Builder
}

type stream struct {
	provider string
	sdk      *ssestream.Stream[anthropic.MessageStreamEventUnion]
	llm.EventQueue
	err  error
	done bool

	blocks  map[int64]*block
	calls   int
	usage   llm.Usage
	content bool
	stopped bool
}

func (s *stream) Next() bool { return s.Advance(func() bool { return !s.done && s.pull() }) }

func (s *stream) Err() error   { return s.err }
func (s *stream) Close() error { return s.sdk.Close() }

func (s *stream) emit(ev llm.Event) { s.Push(ev) }

func (s *stream) pull() bool {
	if s.done {
		return false
	}
	if !s.sdk.Next() {
		s.done = true
		if err := s.sdk.Err(); err != nil {
			s.err = s.mapError(err)
			return false
		}
		if !s.content && !s.stopped {
			s.err = &llm.APIError{Provider: s.provider, Retryable: true,
				Message: "empty response: the stream ended without any content or stop reason"}
		}
		return false
	}
	s.handle(s.sdk.Current())
	return true
}

func (s *stream) mapError(err error) error {
	var ae *llm.APIError
	if errors.As(err, &ae) || errors.Is(err, context.Canceled) {
		return err
	}
	var se *anthropic.Error
	if errors.As(err, &se) {
		return llm.StreamError(s.provider, string(se.Type()), se.Message)
	}
	const prefix = "received error while streaming: "
	if msg := err.Error(); strings.HasPrefix(msg, prefix) {
		return llm.StreamError(s.provider, "", llm.ErrorBodyMessage([]byte(strings.TrimPrefix(msg, prefix))))
	}
	if strings.Contains(err.Error(), "invalid character") || strings.Contains(err.Error(), "unexpected end of JSON") {
		return &llm.APIError{Provider: s.provider, Retryable: true, Message: "malformed stream event: " + err.Error()}
	}
	return llm.TransportError(s.provider, err)
}

func (s *stream) handle(ev anthropic.MessageStreamEventUnion) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		s.usage = llm.Usage{
			InputTokens:      int(u.InputTokens),
			OutputTokens:     int(u.OutputTokens),
			CacheReadTokens:  int(u.CacheReadInputTokens),
			CacheWriteTokens: int(u.CacheCreationInputTokens),
		}
	case "content_block_start":
		cb := ev.ContentBlock
		b := &block{kind: cb.Type}
		s.blocks[ev.Index] = b
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				s.content = true
				s.emit(llm.Event{Type: llm.EventTextDelta, Text: cb.Text})
			}
		case "thinking":
			s.content = true
			if cb.Thinking != "" {
				s.emit(llm.Event{Type: llm.EventReasoningDelta, Text: cb.Thinking})
			}
			if cb.Signature != "" {
				s.emit(llm.Event{Type: llm.EventReasoningSignature, Text: cb.Signature})
			}
		case "redacted_thinking":
			s.content = true
			s.emit(llm.Event{Type: llm.EventRedactedThinking, Text: cb.Data})
		case "tool_use":
			s.content = true
			b.index, b.id, b.name = s.calls, cb.ID, cb.Name
			s.calls++
			s.emit(llm.Event{Type: llm.EventToolCallStart, Index: b.index, ToolCall: llm.ToolCall{ID: b.id, Name: b.name}})
		}
	case "content_block_delta":
		b := s.blocks[ev.Index]
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			s.content = true
			s.emit(llm.Event{Type: llm.EventTextDelta, Text: d.Text})
		case "thinking_delta":
			s.emit(llm.Event{Type: llm.EventReasoningDelta, Text: d.Thinking})
		case "signature_delta":
			s.emit(llm.Event{Type: llm.EventReasoningSignature, Text: d.Signature})
		case "input_json_delta":
			if b != nil && b.kind == "tool_use" && d.PartialJSON != "" {
				b.args.WriteString(d.PartialJSON)
				s.emit(llm.Event{Type: llm.EventToolCallDelta, Index: b.index, Text: d.PartialJSON})
			}
		}
	case "content_block_stop":
		if b := s.blocks[ev.Index]; b != nil && b.kind == "tool_use" {
			s.emit(llm.Event{Type: llm.EventToolCallEnd, Index: b.index,
				ToolCall: llm.ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()}})
		}
		delete(s.blocks, ev.Index)
	case "message_delta":
		u := ev.Usage
		if u.JSON.OutputTokens.Valid() {
			s.usage.OutputTokens = int(u.OutputTokens)
		}
		if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
			s.usage.InputTokens = int(u.InputTokens)
		}
		if u.JSON.CacheReadInputTokens.Valid() && u.CacheReadInputTokens > 0 {
			s.usage.CacheReadTokens = int(u.CacheReadInputTokens)
		}
		if u.JSON.CacheCreationInputTokens.Valid() && u.CacheCreationInputTokens > 0 {
			s.usage.CacheWriteTokens = int(u.CacheCreationInputTokens)
		}
		s.emit(llm.Event{Type: llm.EventUsage, Usage: s.usage})
		if d := ev.Delta; d.StopReason != "" {
			s.stopped = true
			s.emit(llm.Event{Type: llm.EventFinish, FinishReason: FinishReason(string(d.StopReason))})
		}
	}
}

// FinishReason maps an Anthropic stop_reason to the chat-completions
// vocabulary used by llm.Event: end_turn and stop_sequence → stop,
// tool_use → tool_calls, max_tokens → length, refusal → content_filter;
// others (pause_turn, ...) pass through.
func FinishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return stop
}
