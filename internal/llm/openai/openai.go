// Package openai is the chat-completions provider (OpenAI, OpenRouter and
// any OpenAI-compatible server: Ollama, vLLM, llama.cpp, LM Studio), built
// on the official SDK github.com/openai/openai-go/v3 with its streaming
// decoder. Fields the SDK does not model are read from each chunk's raw
// JSON: reasoning_content (DeepSeek, llama.cpp), reasoning and
// reasoning_details (OpenRouter) and error objects inside a 200 stream.
// Wire reference: https://platform.openai.com/docs/api-reference/chat/create-chat-completion
// and https://openrouter.ai/docs/api-reference/streaming.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/hermes-go/hermes/internal/llm"
)

// Config configures a Provider.
type Config struct {
	// Name is the provider slug used in errors and for wire choices:
	// "openai" sends max_completion_tokens and reasoning_effort,
	// "openrouter" sends reasoning.effort; anything else (custom) neither.
	Name string
	// BaseURL is the API base including /v1 (https://api.openai.com/v1).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer"; empty sends no header
	// (local servers).
	APIKey string
	// HTTPClient is used for requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Headers are added to every request (OpenRouter HTTP-Referer, X-Title).
	Headers map[string]string
	// Hints name the env var or config key to fix in auth and model errors.
	Hints llm.ErrorHints
	// Now is the clock for Retry-After dates (default time.Now).
	Now func() time.Time
}

// Provider streams chat completions. It holds no mutable state and is safe
// for concurrent use.
type Provider struct {
	cfg     Config
	service openai.ChatCompletionService
	// schemas caches decoded tool parameter schemas by their JSON text
	// (string → shared.FunctionParameters): every call of every session
	// sends the same tools, and the SDK only reads the maps.
	schemas sync.Map
}

// New returns a Provider for cfg. The SDK's own retries are disabled
// (llm.WithRetry retries) and no OPENAI_* environment variable is read: the
// caller passes base URL and key explicitly.
func New(cfg Config) *Provider {
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
			if res, err = llm.CheckResponse(cfg.Name, res, err, cfg.Hints, cfg.Now()); err != nil {
				return nil, err
			}
			res.Body = newErrorShapeFilter(res.Body)
			return res, nil
		}),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Provider{cfg: cfg, service: openai.NewChatCompletionService(opts...)}
}

// Name returns the provider slug.
func (p *Provider) Name() string { return p.cfg.Name }

// Stream starts a streaming chat completion. HTTP errors (and errors in
// the first chunk) are returned here as *llm.APIError; later errors come
// from the Stream's Err.
func (p *Provider) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	sdk := p.service.NewStreaming(ctx, p.buildParams(req))
	s := &stream{provider: p.cfg.Name, sdk: sdk, calls: map[int64]*callState{}}
	if !s.pull() && s.err != nil {
		_ = sdk.Close()
		return nil, s.err
	}
	return s, nil
}

type callState struct {
	index   int
	id      string
	name    string
	args    []byte
	pending []byte // arguments seen before the name
	started bool
	ended   bool
}

// stream translates SDK chunks into llm.Events through a small queue.
type stream struct {
	provider string
	sdk      *ssestream.Stream[openai.ChatCompletionChunk]
	llm.EventQueue
	err  error
	done bool

	calls     map[int64]*callState
	order     []*callState
	details   detailsMerger
	content   bool // any text, reasoning or tool call seen
	finish    string
	finished  bool
	chunkID   string
	rawIssued bool
}

func (s *stream) Next() bool { return s.Advance(func() bool { return !s.done && s.pull() }) }

func (s *stream) Err() error   { return s.err }
func (s *stream) Close() error { return s.sdk.Close() }

// pull reads one chunk and queues its events; false at the end or on error.
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
		s.flush()
		if !s.content && !s.finished {
			s.err = &llm.APIError{Provider: s.provider, Retryable: true,
				Message: "empty response: the stream ended without any content or finish reason"}
		}
		return false
	}
	s.handle(s.sdk.Current())
	return true
}

func (s *stream) mapError(err error) error {
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return streamErrorOf(s.provider, se.Event.Data)
	}
	var ae *llm.APIError
	if errors.As(err, &ae) || errors.Is(err, context.Canceled) {
		return err
	}
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typeErr) {
		return &llm.APIError{Provider: s.provider, Retryable: true, Message: "malformed stream chunk: " + err.Error()}
	}
	return llm.TransportError(s.provider, err)
}

func (s *stream) emit(ev llm.Event) { s.Push(ev) }

func (s *stream) handle(chunk openai.ChatCompletionChunk) {
	if chunk.ID != "" {
		s.chunkID = chunk.ID
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if text := extraString(d.JSON.ExtraFields, "reasoning_content"); text != "" {
			s.content = true
			s.emit(llm.Event{Type: llm.EventReasoningDelta, Text: text})
		} else if text := extraString(d.JSON.ExtraFields, "reasoning"); text != "" {
			s.content = true
			s.emit(llm.Event{Type: llm.EventReasoningDelta, Text: text})
		}
		if f, ok := d.JSON.ExtraFields["reasoning_details"]; ok {
			s.details.add(f.Raw())
		}
		if d.Content != "" {
			s.content = true
			s.emit(llm.Event{Type: llm.EventTextDelta, Text: d.Content})
		}
		if d.Refusal != "" {
			s.content = true
			s.emit(llm.Event{Type: llm.EventTextDelta, Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			s.toolCallDelta(tc)
		}
		if choice.FinishReason != "" {
			s.endCalls()
			s.finish = choice.FinishReason
			s.finished = true
			s.emit(llm.Event{Type: llm.EventFinish, FinishReason: choice.FinishReason, Raw: s.takeDetails()})
		}
	}
	if chunk.JSON.Usage.Valid() && chunk.Usage.JSON.PromptTokens.Valid() {
		s.emit(llm.Event{Type: llm.EventUsage, Usage: usageOf(chunk.Usage)})
	}
}

// toolCallDelta adds one tool-call delta to its call (see callFor,
// mergeName and mergeArgs for the re-sends some providers make).
func (s *stream) toolCallDelta(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
	s.content = true
	st := s.callFor(tc)
	if tc.ID != "" && st.id == "" {
		st.id = tc.ID
	}
	if tc.Function.Name != "" {
		st.name = mergeName(st.name, tc.Function.Name)
	}
	if !st.started && st.name != "" {
		s.startCall(st)
	}
	args := tc.Function.Arguments
	if args == "" {
		return
	}
	var appended bool
	st.args, appended = mergeArgs(st.args, args)
	switch {
	case !appended && !st.started:
		st.pending = append(st.pending[:0], st.args...)
	case !appended:
		// The arguments were repeated or replaced whole; the end event
		// carries the final text.
	case st.started:
		s.emit(llm.Event{Type: llm.EventToolCallDelta, Index: st.index, Text: args})
	default:
		st.pending = append(st.pending, args...)
	}
}

func (s *stream) startCall(st *callState) {
	st.started = true
	if st.id == "" {
		st.id = fmt.Sprintf("call_%s_%d", s.chunkID, st.index)
	}
	s.emit(llm.Event{Type: llm.EventToolCallStart, Index: st.index, ToolCall: llm.ToolCall{ID: st.id, Name: st.name}})
	if len(st.pending) > 0 {
		s.emit(llm.Event{Type: llm.EventToolCallDelta, Index: st.index, Text: string(st.pending)})
		st.pending = nil
	}
}

func (s *stream) endCall(st *callState) {
	if st.ended {
		return
	}
	if !st.started {
		s.startCall(st)
	}
	st.ended = true
	s.emit(llm.Event{Type: llm.EventToolCallEnd, Index: st.index,
		ToolCall: llm.ToolCall{ID: st.id, Name: st.name, Arguments: string(st.args)}})
}

func (s *stream) endCalls() {
	for _, st := range s.order {
		s.endCall(st)
	}
}

// flush completes what a stream without a finish chunk left open.
func (s *stream) flush() {
	s.endCalls()
	if raw := s.takeDetails(); len(raw) > 0 {
		s.emit(llm.Event{Type: llm.EventReasoningDelta, Raw: raw})
	}
}

func (s *stream) takeDetails() json.RawMessage {
	if s.rawIssued {
		return nil
	}
	raw := s.details.merged()
	if len(raw) > 0 {
		s.rawIssued = true
	}
	return raw
}

func extraString(fields map[string]respjsonField, key string) string {
	f, ok := fields[key]
	if !ok {
		return ""
	}
	var v string
	if json.Unmarshal([]byte(f.Raw()), &v) != nil {
		return ""
	}
	return v
}

// usageOf normalizes chat-completions usage: InputTokens excludes cached
// and cache-write prompt tokens, which are counted separately
// (prompt_tokens_details.cached_tokens; OpenRouter's cache_write_tokens).
func usageOf(u openai.CompletionUsage) llm.Usage {
	cached := int(u.PromptTokensDetails.CachedTokens)
	write := 0
	if f, ok := u.PromptTokensDetails.JSON.ExtraFields["cache_write_tokens"]; ok {
		_ = json.Unmarshal([]byte(f.Raw()), &write)
	}
	in := max(int(u.PromptTokens)-cached-write, 0)
	return llm.Usage{
		InputTokens:      in,
		OutputTokens:     int(u.CompletionTokens),
		CacheReadTokens:  cached,
		CacheWriteTokens: write,
		ReasoningTokens:  int(u.CompletionTokensDetails.ReasoningTokens),
	}
}

// streamErrorOf maps the data of an error frame ({"error": {"message",
// "type", "code"}}, see errorShapeFilter) to an *llm.APIError carrying
// the provider's words. An HTTP-like code of 400–499 other than 408, 409,
// 425 and 429 is never retried: the same request would fail again.
func streamErrorOf(provider string, data []byte) *llm.APIError {
	var body struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &body)
	if body.Error.Message == "" && body.Error.Type == "" && len(body.Error.Code) == 0 {
		return llm.StreamError(provider, "", string(data))
	}
	code := rawString(body.Error.Code)
	e := llm.StreamError(provider, strings.TrimSpace(body.Error.Type+" "+code), body.Error.Message)
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 500 {
		switch n {
		case 408, 409, 425, 429:
			e.Retryable = true
		default:
			e.Retryable = false
		}
	}
	return e
}
