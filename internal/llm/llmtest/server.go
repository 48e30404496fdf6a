// Package llmtest is an in-repo fake model server for tests: an httptest
// server on loopback that answers OpenAI chat-completions SSE
// (POST /v1/chat/completions or /chat/completions) and Anthropic Messages
// SSE (POST /v1/messages) from scripted turns, and records every request so
// tests can assert what hermes sent.
//
// The Nth request (of either wire) gets the Nth Turn; a request past the
// script gets HTTP 400 (not retried, so a run fails fast) with a message saying how many turns were scripted.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// Call is one scripted tool call. Args is the JSON arguments text sent as is
// (it may be deliberately malformed); ID defaults to call_<turn>_<i> (OpenAI)
// or toolu_<turn>_<i> (Anthropic).
type Call struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// Turn scripts one model response.
type Turn struct {
	// Text is the answer, streamed as text deltas.
	Text string `json:"text,omitempty"`
	// Reasoning is streamed first, as reasoning_content (OpenAI wire) or a
	// thinking block with signature "sig-<turn>" (Anthropic wire).
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are streamed after the text, several per response allowed.
	ToolCalls []Call `json:"tool_calls,omitempty"`
	// Usage is reported at the end: OpenAI prompt_tokens = Input+CacheRead+CacheWrite.
	Usage llm.Usage `json:"usage,omitzero"`
	// Status, when not 0 or 200, answers with that HTTP status and an error body.
	Status int `json:"status,omitempty"`
	// Error is the message of the Status error body (default "fake HTTP <status>").
	Error string `json:"error,omitempty"`
	// ErrorInStream, when set, ends a 200 stream with an error object carrying this message.
	ErrorInStream string `json:"error_in_stream,omitempty"`
	// ErrorType is the error type/code sent with Error or ErrorInStream
	// (default overloaded_error when the message mentions overload, else api_error).
	ErrorType string `json:"error_type,omitempty"`
	// RetryAfter is sent as the Retry-After header of a Status answer.
	RetryAfter string `json:"retry_after,omitempty"`
	// ChunkSize splits text, reasoning and arguments into pieces of this many
	// bytes (default 0: one piece each).
	ChunkSize int `json:"chunk_size,omitempty"`
	// FinishReason overrides the finish reason (default stop, or tool_calls
	// when there are tool calls).
	FinishReason string `json:"finish_reason,omitempty"`
	// RawBody, when set, is sent verbatim as a 200 text/event-stream body
	// (used to replay recorded cassettes).
	RawBody string `json:"raw_body,omitempty"`
	// ContentType overrides the Content-Type of a 200 answer (for example
	// text/html with an HTML RawBody: a wrong base URL).
	ContentType string `json:"content_type,omitempty"`
	// Stall, when set, accepts the request and sends nothing until the
	// client gives up (a server that never answers).
	Stall bool `json:"stall,omitempty"`
	// StallAfterFrames > 0 sends that many SSE frames, then nothing until
	// the client gives up (a stream that stops mid-answer).
	StallAfterFrames int `json:"stall_after_frames,omitempty"`
	// CutAfterFrames > 0 sends that many SSE frames, then closes the
	// connection abruptly (a connection lost mid-answer).
	CutAfterFrames int `json:"cut_after_frames,omitempty"`
	// FrameEvery > 0 paces the stream: each SSE frame after the first is
	// sent that long after the previous one (a model that writes slowly).
	FrameEvery time.Duration `json:"frame_every,omitempty"`
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body into a generic map (nil if not JSON).
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// Server is a running fake model server. URL is the OpenAI-style base
// (http://127.0.0.1:PORT/v1), AnthropicURL the Anthropic base
// (http://127.0.0.1:PORT), suitable for OPENROUTER_BASE_URL /
// OPENAI_BASE_URL and ANTHROPIC_BASE_URL.
type Server struct {
	URL          string
	AnthropicURL string

	srv    *httptest.Server
	mu     sync.Mutex
	turns  []Turn
	reqs   []Request
	models []Model
	// respond, when set, answers every request instead of the script.
	respond func(Request) Turn
	strict  bool
	// rejected counts requests answered by the strict check or the
	// context limit, which use up no turn.
	rejected int
	// maxBody, when > 0, is the largest request body answered normally.
	maxBody int
	// forgetBodies keeps requests without body and headers (load tests).
	forgetBodies bool
}

// ForgetBodies makes Requests keep only method and path of each request:
// a load test's thousands of requests then cost the test process nothing,
// so its memory figures are the client's.
func (s *Server) ForgetBodies() {
	s.mu.Lock()
	s.forgetBodies = true
	s.mu.Unlock()
}

// SetResponder makes the server answer each chat request with respond's
// turn instead of the script (for concurrent clients, whose order is not
// fixed). respond may block to hold a response open; it runs on the
// request's goroutine and must be safe for concurrent use.
func (s *Server) SetResponder(respond func(Request) Turn) {
	s.mu.Lock()
	s.respond = respond
	s.mu.Unlock()
}

// ContextLimit makes the server answer HTTP 400 "context_length_exceeded"
// to any request whose body is larger than maxBytes, as a model server does
// to a prompt larger than its context window. The request is recorded and
// uses up no turn.
func (s *Server) ContextLimit(maxBytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxBody = maxBytes
}

// StrictToolArguments makes the server answer HTTP 400 "invalid function
// arguments json string" to any request whose history holds an assistant
// tool call with arguments that are not valid JSON, as vLLM and some
// OpenAI-compatible gateways do. The request is recorded and uses up no turn.
func (s *Server) StrictToolArguments() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict = true
}

// invalidArguments returns the first tool-call arguments in an
// OpenAI-wire request body that are not valid JSON, and whether one exists.
func invalidArguments(body []byte) (string, bool) {
	var req struct {
		Messages []ChatMessage `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "", false
	}
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			if !json.Valid([]byte(tc.Function.Arguments)) {
				return tc.Function.Arguments, true
			}
		}
	}
	return "", false
}

// NewServer starts a server that answers with turns in order and closes it
// when the test ends.
func NewServer(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := Start(turns...)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (for example a helper process of an
// end-to-end test); call Close when done.
func Start(turns ...Turn) *Server {
	s := &Server{turns: turns}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	s.AnthropicURL = s.srv.URL
	return s
}

// LoadTurns reads a script file: a JSON array of Turn objects, or JSON Lines
// with one Turn per line. Errors name the file and the line at fault.
func LoadTurns(path string) ([]Turn, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	trimmed := strings.TrimSpace(string(data))
	if strings.HasPrefix(trimmed, "[") {
		var turns []Turn
		if err := json.Unmarshal([]byte(trimmed), &turns); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return turns, nil
	}
	var turns []Turn
	for i, line := range strings.Split(trimmed, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var t Turn
		if err := json.Unmarshal([]byte(line), &t); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		turns = append(turns, t)
	}
	return turns, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Requests returns copies of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		s.serveModels(w)
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	if s.forgetBodies {
		s.reqs = append(s.reqs, Request{Method: req.Method, Path: req.Path})
	} else {
		s.reqs = append(s.reqs, req)
	}
	if bad, ok := invalidArguments(body); ok && s.strict && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.rejected++
		s.mu.Unlock()
		writeError(w, false, http.StatusBadRequest, "invalid_request_error", "invalid function arguments json string: "+bad)
		return
	}
	if s.maxBody > 0 && len(body) > s.maxBody {
		s.rejected++
		s.mu.Unlock()
		writeError(w, strings.HasSuffix(r.URL.Path, "/messages"), http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("context_length_exceeded: this model's maximum context length is %d bytes, the request has %d", s.maxBody, len(body)))
		return
	}
	n := len(s.reqs) - 1 - s.rejected
	var turn *Turn
	if n < len(s.turns) {
		t := s.turns[n]
		turn = &t
	}
	total := len(s.turns)
	respond := s.respond
	s.mu.Unlock()
	if respond != nil {
		t := respond(req)
		turn = &t
	}

	anthropic := strings.HasSuffix(r.URL.Path, "/messages")
	openai := strings.HasSuffix(r.URL.Path, "/chat/completions")
	if r.Method != http.MethodPost || (!anthropic && !openai) {
		http.Error(w, fmt.Sprintf("llmtest: unknown endpoint %s %s (want POST /v1/chat/completions or /v1/messages)", r.Method, r.URL.Path), http.StatusNotFound)
		return
	}
	if turn == nil {
		writeError(w, anthropic, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("llmtest: request %d has no scripted turn (the script has %d turns)", n+1, total))
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		msg := turn.Error
		if msg == "" {
			msg = fmt.Sprintf("fake HTTP %d", turn.Status)
		}
		writeError(w, anthropic, turn.Status, errorType(*turn, msg), msg)
		return
	}
	if turn.Stall {
		<-r.Context().Done()
		return
	}
	ct := "text/event-stream"
	if turn.ContentType != "" {
		ct = turn.ContentType
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if turn.RawBody != "" {
		_, _ = io.WriteString(w, turn.RawBody)
		return
	}
	var frames []string
	if anthropic {
		frames = anthropicFrames(*turn, n+1)
	} else {
		frames = openAIFrames(*turn, n+1)
	}
	flusher, _ := w.(http.Flusher)
	for i, f := range frames {
		switch {
		case turn.StallAfterFrames > 0 && i == turn.StallAfterFrames:
			<-r.Context().Done()
			return
		case turn.CutAfterFrames > 0 && i == turn.CutAfterFrames:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		}
		if turn.FrameEvery > 0 && i > 0 {
			select {
			case <-time.After(turn.FrameEvery):
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, f)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func errorType(t Turn, msg string) string {
	if t.ErrorType != "" {
		return t.ErrorType
	}
	if strings.Contains(strings.ToLower(msg), "overload") {
		return "overloaded_error"
	}
	return "api_error"
}

func writeError(w http.ResponseWriter, anthropic bool, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var body any
	if anthropic {
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}}
	}
	_ = json.NewEncoder(w).Encode(body)
}

// split cuts s into pieces of size bytes (one piece when size <= 0),
// keeping UTF-8 sequences whole.
func split(s string, size int) []string {
	if s == "" {
		return nil
	}
	if size <= 0 || len(s) <= size {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && end > 0 && !utf8Start(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func sse(event string, v any) string {
	data, _ := json.Marshal(v)
	if event == "" {
		return "data: " + string(data) + "\n\n"
	}
	return "event: " + event + "\ndata: " + string(data) + "\n\n"
}
