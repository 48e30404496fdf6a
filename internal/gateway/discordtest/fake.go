// Package discordtest is an in-repo fake of Discord's REST API (v9/v10)
// and gateway WebSocket for tests (https://discord.com/developers/docs):
// GET gateway, gateway/bot, users/@me, channels/{id}; POST
// channels/{id}/messages and typing; PATCH channels/{id}/messages/{id};
// the gateway's HELLO, IDENTIFY, READY, heartbeat/ACK, RESUME/RESUMED and
// MESSAGE_CREATE dispatches. It keeps Discord's limits and error bodies:
// 2000 characters (50035 Invalid Form Body), 429 with a retry_after body
// and rate-limit headers, 401 for a bad token and close code 4004
// (Authentication failed) on the gateway.
package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// MaxContent is Discord's message content limit, in characters.
const MaxContent = 2000

// Channel types (Discord's numbering).
const (
	GuildText    = 0
	DM           = 1
	PublicThread = 11
)

// IntentMessageContent is the privileged intent without which guild
// messages arrive with empty content.
const IntentMessageContent = 1 << 15

// Message is a message the bot sent (and its later edits).
type Message struct {
	ID        string
	ChannelID string
	Content   string
	Edits     int
}

type channel struct {
	ID, GuildID, ParentID string
	Type                  int
}

// Server is a running fake. API is the base to give the client (the part
// before "api/v9/"); Token is the only accepted bot token.
type Server struct {
	URL   string
	Token string
	// BotID is the bot user's id.
	BotID string

	srv *httptest.Server
	up  websocket.Upgrader

	mu       sync.Mutex
	revoked  bool
	down     bool
	dials    int // gateway connection attempts, refused ones included
	channels map[string]channel
	sent     []Message
	nextID   int64
	seq      int64
	typing   map[string]int
	calls    map[string]int
	failNext map[string][]float64 // route → retry_after seconds of queued 429s
	conns    map[*conn]bool
	backlog  []json.RawMessage // dispatches waiting for a ready connection
	idents   int
	notify   chan struct{}
}

type conn struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	ready   bool
	intents int
}

func (c *conn) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

// New starts a fake accepting token.
func New(token string) *Server {
	s := &Server{Token: token, BotID: "900000000000000001", channels: map[string]channel{}, typing: map[string]int{},
		calls: map[string]int{}, failNext: map[string][]float64{}, conns: map[*conn]bool{}, nextID: 1000,
		notify: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/"
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

// AddChannel registers a channel: DM (guild ""), GuildText or
// PublicThread (parent = the thread's channel).
func (s *Server) AddChannel(id string, typ int, guild, parent string) {
	s.mu.Lock()
	s.channels[id] = channel{ID: id, Type: typ, GuildID: guild, ParentID: parent}
	s.mu.Unlock()
}

// SendMessage dispatches MESSAGE_CREATE from user in channelID (add the
// channel first). It is held until a connection is ready.
func (s *Server) SendMessage(userID, channelID, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	s.nextID++
	d := map[string]any{"id": strconv.FormatInt(s.nextID, 10), "channel_id": channelID, "content": content, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339),
		"author":    map[string]any{"id": userID, "username": "user" + userID, "discriminator": "0"}}
	if ch.GuildID != "" {
		d["guild_id"] = ch.GuildID
	}
	b, _ := json.Marshal(d)
	s.backlog = append(s.backlog, b)
	s.flushLocked()
}

// flushLocked dispatches the backlog to every ready connection, as
// Discord sends a bot's events to each of its open sessions; a message
// stays in the backlog until some connection took it. s.mu is held.
func (s *Server) flushLocked() {
	for len(s.backlog) > 0 {
		delivered := false
		for c := range s.conns {
			if !c.ready {
				continue
			}
			var d map[string]any
			_ = json.Unmarshal(s.backlog[0], &d)
			if _, guild := d["guild_id"]; guild && c.intents&IntentMessageContent == 0 {
				d["content"] = ""
			}
			s.seq++
			if c.write(map[string]any{"op": 0, "t": "MESSAGE_CREATE", "s": s.seq, "d": d}) == nil {
				delivered = true
			}
		}
		if !delivered {
			return
		}
		s.backlog = s.backlog[1:]
	}
}

// FailNext makes the next call of route ("POST messages", "PATCH
// messages", "POST typing") answer 429 with retry_after seconds.
func (s *Server) FailNext(route string, retryAfter float64) {
	s.mu.Lock()
	s.failNext[route] = append(s.failNext[route], retryAfter)
	s.mu.Unlock()
}

// SetDown makes REST answer 503 (and drops gateway connections) while down.
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

// Revoke invalidates the token: REST answers 401 and gateway connections
// close with 4004 Authentication failed.
func (s *Server) Revoke() {
	s.mu.Lock()
	s.revoked = true
	for c := range s.conns {
		c.mu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."), time.Now().Add(time.Second))
		c.mu.Unlock()
		_ = c.ws.Close()
	}
	s.mu.Unlock()
}

// Sent returns the messages sent to channelID, in order.
func (s *Server) Sent(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.sent {
		if m.ChannelID == channelID {
			out = append(out, m)
		}
	}
	return out
}

// Calls counts the calls of route ("POST messages"...), failed ones included.
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// Typing counts typing calls for channelID.
func (s *Server) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}

// Identifies counts IDENTIFY and RESUME handshakes (connections made).
func (s *Server) Identifies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idents
}

// Dials counts gateway connection attempts, those refused while down included.
func (s *Server) Dials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials
}

// WaitSent waits until channelID received n messages and returns them all,
// or returns what it received when the test's deadline is near
// (waitfor.Deadline: an event wait, not a fixed limit; the caller checks
// the count and says what was missing).
func (s *Server) WaitSent(t testing.TB, channelID string, n int) []Message {
	deadline := time.NewTimer(time.Until(waitfor.Deadline(t)))
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.notify
		s.mu.Unlock()
		if got := s.Sent(channelID); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			return s.Sent(channelID)
		}
	}
}

func (s *Server) wakeLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

type apiError struct {
	status int
	body   map[string]any
	retry  float64
}

func errBody(code int, msg string) map[string]any {
	return map[string]any{"code": code, "message": msg}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" || r.URL.Path == "/ws/" {
		s.gateway(w, r)
		return
	}
	path := r.URL.Path
	for _, v := range []string{"/api/v9/", "/api/v10/"} {
		path = strings.TrimPrefix(path, v)
	}
	s.mu.Lock()
	down, revoked := s.down, s.revoked
	s.mu.Unlock()
	if down {
		reply(w, nil, &apiError{503, errBody(0, "503: Service Unavailable"), 0})
		return
	}
	if auth := r.Header.Get("Authorization"); revoked || strings.TrimPrefix(auth, "Bot ") != s.Token {
		reply(w, nil, &apiError{401, errBody(0, "401: Unauthorized"), 0})
		return
	}
	seg := strings.Split(strings.Trim(path, "/"), "/")
	route := r.Method + " " + seg[len(seg)-1]
	if len(seg) == 4 && seg[2] == "messages" {
		route = r.Method + " messages"
	}
	s.mu.Lock()
	s.calls[route]++
	if q := s.failNext[route]; len(q) > 0 {
		s.failNext[route] = q[1:]
		s.mu.Unlock()
		reply(w, nil, &apiError{429, map[string]any{"message": "You are being rate limited.", "retry_after": q[0], "global": false}, q[0]})
		return
	}
	s.mu.Unlock()
	var result any
	var aerr *apiError
	switch {
	case r.Method == "GET" && path == "gateway":
		result = map[string]any{"url": "ws://" + r.Host + "/ws"}
	case r.Method == "GET" && path == "gateway/bot":
		result = map[string]any{"url": "ws://" + r.Host + "/ws", "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}}
	case r.Method == "GET" && path == "users/@me":
		result = s.botUser()
	case len(seg) == 2 && seg[0] == "channels" && r.Method == "GET":
		result, aerr = s.channel(seg[1])
	case len(seg) == 3 && seg[2] == "typing" && r.Method == "POST":
		s.mu.Lock()
		s.typing[seg[1]]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	case len(seg) == 3 && seg[2] == "messages" && r.Method == "POST":
		result, aerr = s.post(r, seg[1])
	case len(seg) == 4 && seg[2] == "messages" && r.Method == "PATCH":
		result, aerr = s.patch(r, seg[1], seg[3])
	default:
		aerr = &apiError{404, errBody(0, "404: Not Found"), 0}
	}
	reply(w, result, aerr)
}

func (s *Server) botUser() map[string]any {
	return map[string]any{"id": s.BotID, "username": "hermes", "discriminator": "0", "bot": true}
}

func (s *Server) channel(id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[id]
	if !ok {
		return nil, &apiError{404, errBody(10003, "Unknown Channel"), 0}
	}
	out := map[string]any{"id": ch.ID, "type": ch.Type}
	if ch.GuildID != "" {
		out["guild_id"] = ch.GuildID
	}
	if ch.ParentID != "" {
		out["parent_id"] = ch.ParentID
	}
	return out, nil
}

func tooLong() *apiError {
	return &apiError{400, map[string]any{"code": 50035, "message": "Invalid Form Body", "errors": map[string]any{
		"content": map[string]any{"_errors": []any{map[string]any{"code": "BASE_TYPE_MAX_LENGTH",
			"message": fmt.Sprintf("Must be %d or fewer in length.", MaxContent)}}}}}, 0}
}

func checkContent(content string) *apiError {
	if strings.TrimSpace(content) == "" {
		return &apiError{400, errBody(50006, "Cannot send an empty message"), 0}
	}
	if utf8.RuneCountInString(content) > MaxContent {
		return tooLong()
	}
	return nil
}

func decode(r *http.Request) (string, error) {
	var body struct {
		Content string `json:"content"`
	}
	err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&body)
	return body.Content, err
}

func (s *Server) post(r *http.Request, channelID string) (any, *apiError) {
	content, err := decode(r)
	if err != nil {
		return nil, &apiError{400, errBody(50109, "The request body contains invalid JSON."), 0}
	}
	if e := checkContent(content); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channelID]; !ok {
		return nil, &apiError{404, errBody(10003, "Unknown Channel"), 0}
	}
	s.nextID++
	m := Message{ID: strconv.FormatInt(s.nextID, 10), ChannelID: channelID, Content: content}
	s.sent = append(s.sent, m)
	s.wakeLocked()
	return s.messageJSON(m), nil
}

func (s *Server) patch(r *http.Request, channelID, id string) (any, *apiError) {
	content, err := decode(r)
	if err != nil {
		return nil, &apiError{400, errBody(50109, "The request body contains invalid JSON."), 0}
	}
	if e := checkContent(content); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		if m := &s.sent[i]; m.ID == id && m.ChannelID == channelID {
			m.Content = content
			m.Edits++
			s.wakeLocked()
			return s.messageJSON(*m), nil
		}
	}
	return nil, &apiError{404, errBody(10008, "Unknown Message"), 0}
}

func (s *Server) messageJSON(m Message) map[string]any {
	return map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339), "author": s.botUser()}
}

func reply(w http.ResponseWriter, result any, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	if e != nil {
		if e.status == 429 {
			w.Header().Set("Retry-After", strconv.Itoa(int(e.retry+0.999)))
			w.Header().Set("X-RateLimit-Limit", "5")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(e.retry, 'f', 3, 64))
			w.Header().Set("X-RateLimit-Bucket", "fakebucket")
			w.Header().Set("X-RateLimit-Scope", "user")
		}
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(e.body)
		return
	}
	_ = json.NewEncoder(w).Encode(result)
}
