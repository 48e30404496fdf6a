// Package gateway serves the session runtime to people and programs
// outside the terminal: the OpenAI-compatible API server and the chat
// platforms (one file each). Every platform is a client of one
// session.Runtime.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/httpguard"
	"github.com/hermes-go/hermes/internal/responsestore"
	"github.com/hermes-go/hermes/internal/session"
)

// APIServerConfig configures the API server platform (Hermes Agent's
// API_SERVER_* variables).
type APIServerConfig struct {
	// Key is API_SERVER_KEY: the bearer token clients must send. Empty is
	// only allowed on a loopback address.
	Key string
	// Host is API_SERVER_HOST (default 127.0.0.1); Port is API_SERVER_PORT
	// (default 8642; 0 picks a free port).
	Host string
	Port int
	// ModelName is the model id served by /v1/models (default hermes-agent).
	ModelName string
	// MaxBodyBytes bounds a request body (default 4 MiB).
	MaxBodyBytes int64
	// TurnTimeout bounds one answer (default 10 minutes).
	TurnTimeout time.Duration
	// MaxStoredResponses bounds the responses kept for previous_response_id
	// in memory when Responses is nil (default 1000; the oldest are
	// forgotten).
	MaxStoredResponses int
	// Responses keeps the Responses API objects (nil = in this process's
	// memory, bounded by MaxStoredResponses). With database.backend
	// postgres it is the database's table, so any replica resolves any
	// previous_response_id (database.Responses).
	Responses responsestore.Store
	// AllowedOrigins are the browser origins ("https://chat.example.com")
	// whose pages may call the API (API_SERVER_CORS_ORIGINS); a request
	// carrying any other Origin header is refused. Without this a web page
	// the user visits could post prompts to a keyless loopback server (a
	// form-encoded or text/plain POST needs no CORS preflight) and have
	// the agent's tools run them.
	AllowedOrigins []string
	// MaxBodyBytesInFlight bounds the request-body bytes read and not yet
	// parsed, all requests together (default 16 × MaxBodyBytes); requests
	// past it are answered 503 with Retry-After (httpguard.Budget).
	MaxBodyBytesInFlight int64
	// BodyTimeout bounds the time a request body may take to arrive
	// (httpguard.BodyDeadline; default 30 s).
	BodyTimeout time.Duration
	// Conns bounds the server's connections, in total and per client
	// address (httpguard defaults when zero).
	Conns httpguard.Limits
	// Now is the clock (time.Now).
	Now func() time.Time
	// Log receives the server's warnings (connection limits hit, a box
	// that could not be removed; nil = discard).
	Log *slog.Logger
}

// Defaults of APIServerConfig.
const (
	DefaultAPIServerHost = "127.0.0.1"
	DefaultAPIServerPort = 8642
	DefaultModelName     = "hermes-agent"
)

// SessionHeader names the session a request continues (Hermes Agent's
// X-Hermes-Session-Id); responses carry back the stored session id, which
// the CLI's session commands take.
const SessionHeader = "X-Hermes-Session-Id"

// APIServer is the OpenAI-compatible HTTP front end of a session runtime.
type APIServer struct {
	cfg    APIServerConfig
	rt     *session.Runtime
	srv    *http.Server
	ln     net.Listener
	bodies *httpguard.Budget
}

// NewAPIServer checks cfg and binds the listener. It refuses a
// non-loopback address without a key.
func NewAPIServer(rt *session.Runtime, cfg APIServerConfig) (*APIServer, error) {
	if cfg.Host == "" {
		cfg.Host = DefaultAPIServerHost
	}
	if cfg.ModelName == "" {
		cfg.ModelName = DefaultModelName
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = 10 * time.Minute
	}
	if cfg.MaxStoredResponses <= 0 {
		cfg.MaxStoredResponses = 1000
	}
	if cfg.Responses == nil {
		cfg.Responses = responsestore.NewMemory(cfg.MaxStoredResponses)
	}
	if cfg.MaxBodyBytesInFlight <= 0 {
		cfg.MaxBodyBytesInFlight = 16 * cfg.MaxBodyBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Key == "" && !httpguard.LoopbackHost(cfg.Host) {
		return nil, fmt.Errorf("API_SERVER_HOST=%s is not a loopback address and API_SERVER_KEY is empty: set API_SERVER_KEY (clients send it as a bearer token) or bind 127.0.0.1", cfg.Host)
	}
	conns := httpguard.NewConns(cfg.Conns, cfg.Log, cfg.Now)
	ln, err := conns.Listen(net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("API server: listening on %s:%d (API_SERVER_HOST, API_SERVER_PORT): %w", cfg.Host, cfg.Port, err)
	}
	s := &APIServer{cfg: cfg, rt: rt, ln: ln, bodies: httpguard.NewBudget(cfg.MaxBodyBytesInFlight)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.auth(s.models))
	mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chatCompletions))
	mux.HandleFunc("POST /v1/responses", s.auth(s.createResponse))
	mux.HandleFunc("GET /v1/responses/{id}", s.auth(s.getResponse))
	mux.HandleFunc("DELETE /v1/responses/{id}", s.auth(s.deleteResponse))
	policy := httpguard.Policy{Keyed: cfg.Key != "", AllowedOrigins: cfg.AllowedOrigins,
		KeyHint: "API_SERVER_KEY", OriginHint: "API_SERVER_CORS_ORIGINS",
		Refuse: func(w http.ResponseWriter, status int, reason, msg string) { writeAPIError(w, status, reason, msg) }}
	s.srv = httpguard.NewServer(httpguard.BodyDeadline(policy.Handler(mux), cfg.BodyTimeout))
	return s, nil
}

// Addr is the address the server listens on.
func (s *APIServer) Addr() string { return s.ln.Addr().String() }

// Serve answers requests until Shutdown.
func (s *APIServer) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting requests and waits for running ones until ctx ends.
func (s *APIServer) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// auth checks the bearer token in constant time (the browser checks,
// Origin and Host, are the listener's httpguard.Policy).
func (s *APIServer) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Key != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.Key)) != 1 {
				writeAPIError(w, http.StatusUnauthorized, "invalid_api_key", "missing or wrong bearer token (API_SERVER_KEY)")
				return
			}
		}
		h(w, r)
	}
}

func (s *APIServer) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "platform": "hermes-agent"})
}

func (s *APIServer) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.cfg.ModelName, "object": "model", "created": s.cfg.Now().Unix(), "owned_by": "hermes",
	}}})
}

// readBody reads a request body of at most MaxBodyBytes, answering 413
// past it (before reading when Content-Length says so), and 503 with
// Retry-After when the server's MaxBodyBytesInFlight has no room for it
// now (httpguard.Budget.Reserve). Call release once the body is
// parsed.
func (s *APIServer) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	tooLarge := func() {
		writeAPIError(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the request body is larger than %d bytes", s.cfg.MaxBodyBytes))
	}
	want := s.cfg.MaxBodyBytes
	if r.ContentLength > want {
		tooLarge()
		return nil, nil, false
	} else if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	release, err := s.bodies.Reserve(want)
	if err != nil {
		httpguard.RefuseBusy(w)
		writeAPIError(w, http.StatusServiceUnavailable, "server_busy", "the server is reading too many request bodies; try again")
		return nil, nil, false
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(want, 64<<10)))
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, want)); err != nil {
		release()
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			tooLarge()
		} else {
			writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "reading the request body: "+err.Error())
		}
		return nil, nil, false
	}
	return buf.Bytes(), release, true
}

// openSession opens the session ref names, seeding a new session with
// conv's system text and history. ref is what a client sent as
// X-Hermes-Session-Id: a stored session id (what responses carry back,
// so `hermes sessions show ID` takes it) continues that session; any
// other value is the client's own name for a conversation, kept in
// sessions.json like a chat's key; "" starts a new session.
func (s *APIServer) openSession(ctx context.Context, ref string, conv conversation) (*session.Session, error) {
	o := session.OpenOptions{Source: "api_server", Platform: "api_server", ExtraSystem: conv.System, History: conv.History}
	switch {
	case ref == "":
	case s.storedSession(ctx, ref):
		o.Resume = ref
	default:
		o.Key = "api_server:" + ref
	}
	return s.rt.Open(ctx, o)
}

// storedSession reports whether id is the exact id of a session in
// state.db (not a prefix or title: a client's own key must not resume
// someone else's session by resembling its title).
func (s *APIServer) storedSession(ctx context.Context, id string) bool {
	st, err := s.rt.Store().Session(ctx, id)
	return err == nil && st.ID == id
}

// answer runs one turn of sess and calls onEvent for its progress events.
func (s *APIServer) answer(ctx context.Context, sess *session.Session, text string, onEvent func(session.Event)) (session.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TurnTimeout)
	defer cancel()
	last, err := sess.Ask(ctx, text, session.AskOptions{Subscribe: session.SubscribeOptions{MaxPendingDeltaBytes: -1, KeepPieces: true}}, onEvent)
	if err != nil {
		return session.Event{}, err
	}
	return last, last.Err
}

func (s *APIServer) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, release, ok := s.readBody(w, r)
	if !ok {
		return
	}
	req, conv, err := parseChatRequest(body)
	release()
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	key := r.Header.Get(SessionHeader)
	if key != "" {
		conv.History, conv.System = nil, "" // the session has them
	}
	sess, err := s.openSession(r.Context(), key, conv)
	if err != nil {
		writeAPIError(w, http.StatusInternalServerError, "server_error", "opening the session: "+err.Error())
		return
	}
	w.Header().Set(SessionHeader, sess.ID())
	id := newID("chatcmpl-")
	created := s.cfg.Now().Unix()
	// A client without a session header sends the whole conversation
	// each time and never comes back to this session: its box goes.
	oneShot := key == ""
	if req.Stream {
		s.streamChat(w, r, sess, conv.Text, id, created, oneShot)
		return
	}
	final, err := s.answer(r.Context(), sess, conv.Text, nil)
	if oneShot {
		s.dropBox(sess.ID())
	}
	if err != nil {
		writeAPIError(w, http.StatusBadGateway, "upstream_error", err.Error())
		return
	}
	u := final.Result.Usage
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": s.cfg.ModelName,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": final.Text}}},
		"usage": map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens,
			"total_tokens": u.InputTokens + u.OutputTokens},
	})
}

// streamChat answers with server-sent chat.completion.chunk events; tool
// progress goes out as `event: hermes.tool.progress`.
func (s *APIServer) streamChat(w http.ResponseWriter, r *http.Request, sess *session.Session, text, id string, created int64, oneShot bool) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		writeSSE(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.cfg.ModelName,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	_, err := s.answer(r.Context(), sess, text, func(ev session.Event) {
		switch ev.Kind {
		case session.TextDelta:
			chunk(map[string]any{"content": ev.Text}, nil)
		case session.ToolStart, session.ToolEnd:
			status := "running"
			if ev.Kind == session.ToolEnd {
				status = "done"
				if ev.IsError {
					status = "error"
				}
			}
			writeSSE(w, "hermes.tool.progress", map[string]any{"tool": ev.Tool, "call_id": ev.CallID, "status": status})
		default:
			return
		}
		flush()
	})
	if oneShot {
		s.dropBox(sess.ID())
	}
	if err != nil {
		writeSSE(w, "", map[string]any{"error": map[string]any{"message": err.Error(), "type": "upstream_error"}})
	} else {
		chunk(map[string]any{}, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
	flush()
}

// dropBox deletes the box of session id, persistent layer included, when
// the backend keeps one per session (box): chat-completions clients
// without X-Hermes-Session-Id (OpenAI-compatible UIs) send the whole
// conversation with every request, so each request's session is used
// once, and its layer (1.4 MiB or more) was left behind. The
// conversation stays in state.db; continuing it by its id starts a fresh
// box. It runs before the answer is written, so a client continuing the
// session never races the removal.
func (s *APIServer) dropBox(id string) {
	rm, ok := s.rt.Backend().(interface{ Remove(taskID string) error })
	if !ok {
		return
	}
	if err := rm.Remove(id); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if s.cfg.Log != nil {
			s.cfg.Log.Warn("API server: removing the box of a session failed", "session", id, "err", err)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeAPIError answers in OpenAI's error shape.
func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": code, "code": code}})
}

func writeSSE(w io.Writer, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// newID returns prefix + 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
