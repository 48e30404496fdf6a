// Package slacktest is an in-repo fake of Slack's Web API and Socket Mode
// for tests (https://api.slack.com/apis/socket-mode): auth.test,
// apps.connections.open, chat.postMessage and chat.update, and the Socket
// Mode WebSocket (hello, events_api envelopes that must be acknowledged,
// WebSocket pings, disconnect). It keeps Slack's answers: HTTP 200 with
// {"ok":false,"error":...} ("invalid_auth", "msg_too_long",
// "channel_not_found", "message_not_found"), HTTP 429 with Retry-After for
// "ratelimited".
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// MaxText is the text length past which chat.postMessage answers
// msg_too_long (Slack truncates at 40,000 characters).
const MaxText = 40000

// Message is a message the bot posted (and its later edits).
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Edits    int
}

// Server is a running fake. URL is the Web API base (slack.OptionAPIURL);
// BotToken (xoxb-) and AppToken (xapp-) are the only accepted tokens.
type Server struct {
	URL      string
	BotToken string
	AppToken string
	// BotUser is the bot's user id (auth.test).
	BotUser string

	srv *httptest.Server
	up  websocket.Upgrader

	mu       sync.Mutex
	revoked  bool
	down     bool
	sent     []Message
	ts       int64
	events   []json.RawMessage // events waiting for a connection
	unacked  map[string]json.RawMessage
	envSeq   int
	conns    map[*conn]bool
	opens    int
	calls    map[string]int
	failNext map[string][]int
	notify   chan struct{}
}

type conn struct {
	ws *websocket.Conn
	mu sync.Mutex
}

func (c *conn) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

// New starts a fake accepting botToken and appToken.
func New(botToken, appToken string) *Server {
	s := &Server{BotToken: botToken, AppToken: appToken, BotUser: "UBOT", unacked: map[string]json.RawMessage{},
		conns: map[*conn]bool{}, calls: map[string]int{}, failNext: map[string][]int{}, notify: make(chan struct{}),
		ts: 1700000000}
	// Slack's client sends Origin: https://api.slack.com.
	s.up.CheckOrigin = func(*http.Request) bool { return true }
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/api/"
	return s
}

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	for c := range s.conns {
		_ = c.ws.Close()
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// nextTSLocked is a new message timestamp ("1700000001.000100").
func (s *Server) nextTSLocked() string {
	s.ts++
	return fmt.Sprintf("%d.000100", s.ts)
}

// SendMessage delivers a message event from user in channel (a "D..."
// channel is a DM) and returns its ts; threadTS puts it in a thread.
func (s *Server) SendMessage(user, channel, threadTS, text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.nextTSLocked()
	typ := "channel"
	if strings.HasPrefix(channel, "D") {
		typ = "im"
	}
	ev := map[string]any{"type": "message", "channel": channel, "user": user, "text": text, "ts": ts,
		"event_ts": ts, "channel_type": typ, "team": "T1"}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	b, _ := json.Marshal(ev)
	s.events = append(s.events, b)
	s.flushLocked()
	return ts
}

// flushLocked sends waiting events to a connection; s.mu is held.
func (s *Server) flushLocked() {
	for c := range s.conns {
		for len(s.events) > 0 {
			s.envSeq++
			id := fmt.Sprintf("env-%d", s.envSeq)
			env := map[string]any{"envelope_id": id, "type": "events_api", "accepts_response_payload": false,
				"retry_attempt": 0, "retry_reason": "",
				"payload": map[string]any{"token": "verif", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
					"event_id": "Ev" + id, "event_time": time.Now().Unix(), "event": json.RawMessage(s.events[0])}}
			if err := c.write(env); err != nil {
				break
			}
			s.unacked[id] = s.events[0]
			s.events = s.events[1:]
		}
		return
	}
}

// Unacked counts envelopes the client has not acknowledged.
func (s *Server) Unacked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unacked)
}

// FailNext makes the next call of method ("chat.postMessage") answer
// HTTP 429 with Retry-After seconds.
func (s *Server) FailNext(method string, retryAfter int) {
	s.mu.Lock()
	s.failNext[method] = append(s.failNext[method], retryAfter)
	s.mu.Unlock()
}

// SetDown makes the Web API answer 503 and drops Socket Mode connections.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	if down {
		for c := range s.conns {
			_ = c.ws.Close()
		}
	}
	s.mu.Unlock()
}

// Revoke invalidates the tokens (invalid_auth) and drops connections.
func (s *Server) Revoke() {
	s.mu.Lock()
	s.revoked = true
	for c := range s.conns {
		_ = c.ws.Close()
	}
	s.mu.Unlock()
}

// Sent returns the messages posted to channel, in order.
func (s *Server) Sent(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.sent {
		if m.Channel == channel {
			out = append(out, m)
		}
	}
	return out
}

// Calls counts calls of method, failed ones included.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Opens counts apps.connections.open calls that succeeded.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}

// WaitSent waits until channel received n messages and returns them all,
// or returns what it received when the test's deadline is near
// (waitfor.Deadline: an event wait, not a fixed limit; the caller checks
// the count and says what was missing).
func (s *Server) WaitSent(t testing.TB, channel string, n int) []Message {
	deadline := time.NewTimer(time.Until(waitfor.Deadline(t)))
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.notify
		s.mu.Unlock()
		if got := s.Sent(channel); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			return s.Sent(channel)
		}
	}
}

func (s *Server) wakeLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/link" || r.URL.Path == "/link/" {
		s.socket(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	s.mu.Lock()
	down, revoked := s.down, s.revoked
	s.calls[method]++
	var retry []int
	if q := s.failNext[method]; len(q) > 0 {
		retry, s.failNext[method] = q[:1], q[1:]
	}
	s.mu.Unlock()
	if down {
		http.Error(w, "<html>upstream unavailable</html>", http.StatusServiceUnavailable)
		return
	}
	if len(retry) > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(retry[0]))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
		return
	}
	_ = r.ParseForm()
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		token = r.Form.Get("token")
	}
	want := s.BotToken
	if method == "apps.connections.open" {
		want = s.AppToken
	}
	if revoked || token != want {
		fail(w, "invalid_auth")
		return
	}
	switch method {
	case "auth.test":
		ok(w, map[string]any{"url": "https://fake.slack.com/", "team": "Fake", "user": "hermes", "team_id": "T1",
			"user_id": s.BotUser, "bot_id": "B1"})
	case "apps.connections.open":
		s.mu.Lock()
		s.opens++
		s.mu.Unlock()
		ok(w, map[string]any{"url": "ws://" + r.Host + "/link?ticket=fake"})
	case "chat.postMessage":
		s.post(w, r.Form)
	case "chat.update":
		s.update(w, r.Form)
	default:
		fail(w, "unknown_method")
	}
}

func (s *Server) post(w http.ResponseWriter, f map[string][]string) {
	get := func(k string) string {
		if v := f[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	ch, text := get("channel"), get("text")
	switch {
	case ch == "":
		fail(w, "channel_not_found")
		return
	case strings.TrimSpace(text) == "":
		fail(w, "no_text")
		return
	case utf8.RuneCountInString(text) > MaxText:
		fail(w, "msg_too_long")
		return
	}
	s.mu.Lock()
	m := Message{Channel: ch, TS: s.nextTSLocked(), ThreadTS: get("thread_ts"), Text: text}
	s.sent = append(s.sent, m)
	s.wakeLocked()
	s.mu.Unlock()
	ok(w, map[string]any{"channel": ch, "ts": m.TS, "message": map[string]any{"type": "message", "text": text, "ts": m.TS, "bot_id": "B1"}})
}

func (s *Server) update(w http.ResponseWriter, f map[string][]string) {
	ch, ts, text := first(f["channel"]), first(f["ts"]), first(f["text"])
	if utf8.RuneCountInString(text) > MaxText {
		fail(w, "msg_too_long")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		if m := &s.sent[i]; m.Channel == ch && m.TS == ts {
			m.Text = text
			m.Edits++
			s.wakeLocked()
			ok(w, map[string]any{"channel": ch, "ts": ts, "text": text})
			return
		}
	}
	fail(w, "message_not_found")
}

func first(v []string) string {
	if len(v) > 0 {
		return v[0]
	}
	return ""
}

func ok(w http.ResponseWriter, body map[string]any) {
	body["ok"] = true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func fail(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": code})
}

// socket serves one Socket Mode connection: hello, envelopes, acks,
// and a WebSocket ping every 500 ms.
func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws}
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = ws.Close()
	}()
	if c.write(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "fake", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": "A1"}}) != nil {
		return
	}
	s.mu.Lock()
	s.conns[c] = true
	s.flushLocked()
	s.mu.Unlock()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				c.mu.Lock()
				err := ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
				c.mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := ws.ReadJSON(&ack); err != nil {
			return
		}
		s.mu.Lock()
		delete(s.unacked, ack.EnvelopeID)
		s.mu.Unlock()
	}
}
