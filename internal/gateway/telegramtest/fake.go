// Package telegramtest is an in-repo fake of the Telegram Bot API
// (https://core.telegram.org/bots/api) for tests: getMe, getUpdates (long
// polling), sendMessage, editMessageText and sendChatAction, with the real
// limits and error strings (4096 UTF-16 units, "message is too long",
// "message text is empty", "message is not modified", "can't parse
// entities" for unbalanced legacy Markdown, 429 with retry_after). Requests may be JSON, form or multipart encoded.
package telegramtest

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
	"unicode/utf16"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// MaxMessageUTF16 is Telegram's message text limit, in UTF-16 code units.
const MaxMessageUTF16 = 4096

// Message is a message the bot sent (and its later edits).
type Message struct {
	ID     int64
	ChatID int64
	Text   string
	Edits  int
}

// Server is a running fake Bot API. URL is the base to give the client
// (TELEGRAM_BASE_URL); Token is the only accepted bot token.
type Server struct {
	URL   string
	Token string
	// OnSend, when set before use, is called with every message sent
	// (for load tests that wait on many chats).
	OnSend func(Message)

	srv *httptest.Server

	mu       sync.Mutex
	updates  []pendingUpdate // unconfirmed, in update_id order
	nextUpd  int64
	nextMsg  int64
	sent     []Message
	actions  map[int64]int
	failNext map[string][]int // method → retry_after of queued 429s
	calls    map[string]int
	notify   chan struct{}
	// polls are the getUpdates requests in progress (each closes its
	// channel when a newer one terminates it, as the Bot API does);
	// maxPolls is the most ever in progress at once, conflicts how many
	// were terminated by another.
	polls     map[chan struct{}]bool
	maxPolls  int
	conflicts int
	delivered map[int64]int // update_id → getUpdates answers that held it
}

// pendingUpdate is an update getUpdates has not seen confirmed.
type pendingUpdate struct {
	id  int64
	raw json.RawMessage
}

// New starts a fake Bot API accepting token.
func New(token string) *Server {
	s := &Server{Token: token, actions: map[int64]int{}, failNext: map[string][]int{}, calls: map[string]int{},
		notify: make(chan struct{}), nextUpd: 1, nextMsg: 1,
		polls: map[chan struct{}]bool{}, delivered: map[int64]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.CloseClientConnections(); s.srv.Close() }

// SendText queues an incoming text message from user in chat. chatType is
// "private", "group" or "supergroup"; for private chats chatID = userID.
func (s *Server) SendText(userID, chatID int64, chatType, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpd
	s.nextUpd++
	upd := map[string]any{"update_id": id, "message": map[string]any{
		"message_id": 1000 + id, "date": time.Now().Unix(), "text": text,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": fmt.Sprint("user", userID)},
		"chat": map[string]any{"id": chatID, "type": chatType},
	}}
	b, _ := json.Marshal(upd)
	s.updates = append(s.updates, pendingUpdate{id: id, raw: b})
	s.wake()
}

// FailNext makes the next call of method fail with 429 Too Many Requests
// and retry_after seconds.
func (s *Server) FailNext(method string, retryAfter int) {
	s.mu.Lock()
	s.failNext[method] = append(s.failNext[method], retryAfter)
	s.mu.Unlock()
}

// Sent returns the messages sent to chatID, in order.
func (s *Server) Sent(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.sent {
		if m.ChatID == chatID {
			out = append(out, m)
		}
	}
	return out
}

// Calls counts the calls of method (failed ones included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// MaxConcurrentPolls is the most getUpdates requests ever in progress at
// once: 1 when the bot had one consumer at a time.
func (s *Server) MaxConcurrentPolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxPolls
}

// Conflicts counts getUpdates requests terminated by a newer one (the Bot
// API answers those 409 Conflict).
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// Deliveries counts the getUpdates answers that held update id (more
// than one: it was not confirmed by the consumer that got it first).
func (s *Server) Deliveries(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[id]
}

// Pending is how many updates no getUpdates offset has confirmed yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// ChatActions counts sendChatAction calls for chatID.
func (s *Server) ChatActions(chatID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actions[chatID]
}

// WaitSent waits until chatID received n messages and returns them all,
// or returns what it received when the test's deadline is near
// (waitfor.Deadline: an event wait, not a fixed limit; the caller checks
// the count and says what was missing).
func (s *Server) WaitSent(t testing.TB, chatID int64, n int) []Message {
	deadline := time.NewTimer(time.Until(waitfor.Deadline(t)))
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.notify
		s.mu.Unlock()
		if got := s.Sent(chatID); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			return s.Sent(chatID)
		}
	}
}

// wake tells waiters something changed; s.mu is held.
func (s *Server) wake() {
	close(s.notify)
	s.notify = make(chan struct{})
}

type apiError struct {
	status int
	desc   string
	retry  int
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		reply(w, nil, &apiError{404, "Not Found", 0})
		return
	}
	if token != s.Token {
		reply(w, nil, &apiError{401, "Unauthorized", 0})
		return
	}
	p, err := params(r)
	if err != nil {
		reply(w, nil, &apiError{400, "Bad Request: " + err.Error(), 0})
		return
	}
	s.mu.Lock()
	s.calls[method]++
	if q := s.failNext[method]; len(q) > 0 {
		s.failNext[method] = q[1:]
		s.mu.Unlock()
		reply(w, nil, &apiError{429, fmt.Sprintf("Too Many Requests: retry after %d", q[0]), q[0]})
		return
	}
	s.mu.Unlock()
	var result any
	var aerr *apiError
	switch method {
	case "getMe":
		result = map[string]any{"id": 1, "is_bot": true, "first_name": "hermes", "username": "hermes_test_bot"}
	case "getUpdates":
		result, aerr = s.getUpdates(r, p)
	case "sendMessage":
		result, aerr = s.sendMessage(p)
	case "editMessageText":
		result, aerr = s.editMessageText(p)
	case "sendChatAction":
		chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
		s.mu.Lock()
		s.actions[chat]++
		s.mu.Unlock()
		result = true
	default:
		aerr = &apiError{404, "Not Found: method not found", 0}
	}
	reply(w, result, aerr)
}

// getUpdates answers the updates from offset on, waiting up to timeout
// (capped at 2 s) for one. A newer getUpdates terminates one in progress
// with 409 Conflict, as the Bot API does when two consumers poll a bot.
func (s *Server) getUpdates(r *http.Request, p map[string]string) ([]json.RawMessage, *apiError) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	deadline := time.After(time.Duration(min(timeout, 2)) * time.Second)
	mine := make(chan struct{})
	s.mu.Lock()
	s.maxPolls = max(s.maxPolls, len(s.polls)+1)
	for other := range s.polls {
		close(other)
		delete(s.polls, other)
		s.conflicts++
	}
	s.polls[mine] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.polls, mine)
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		// As the Bot API does, an offset confirms (and forgets) every
		// update before it.
		confirmed := 0
		for confirmed < len(s.updates) && s.updates[confirmed].id < offset {
			confirmed++
		}
		s.updates = s.updates[confirmed:]
		var out []json.RawMessage
		for _, u := range s.updates {
			out = append(out, u.raw)
		}
		ch := s.notify
		if len(out) > 0 || timeout == 0 {
			for _, u := range s.updates {
				s.delivered[u.id]++
			}
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return nil, nil
		case <-r.Context().Done():
			return nil, nil
		case <-mine:
			return nil, &apiError{409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", 0}
		}
	}
}

func checkText(text string) *apiError {
	if strings.TrimSpace(text) == "" {
		return &apiError{400, "Bad Request: message text is empty", 0}
	}
	if len(utf16.Encode([]rune(text))) > MaxMessageUTF16 {
		return &apiError{400, "Bad Request: message is too long", 0}
	}
	return nil
}

// checkEntities refuses text the legacy Markdown parser cannot parse
// (ParseMarkdown), as the Bot API does.
func checkEntities(mode, text string) *apiError {
	if mode != "Markdown" {
		return nil
	}
	if err := ParseMarkdown(text); err != nil {
		return &apiError{400, "Bad Request: " + err.Error(), 0}
	}
	return nil
}

func (s *Server) sendMessage(p map[string]string) (any, *apiError) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		return nil, &apiError{400, "Bad Request: chat not found", 0}
	}
	if e := checkText(p["text"]); e != nil {
		return nil, e
	}
	if e := checkEntities(p["parse_mode"], p["text"]); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := Message{ID: s.nextMsg, ChatID: chat, Text: p["text"]}
	s.nextMsg++
	s.sent = append(s.sent, m)
	s.wake()
	if s.OnSend != nil {
		s.OnSend(m)
	}
	return map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "text": m.Text,
		"chat": map[string]any{"id": chat, "type": "private"}}, nil
}

func (s *Server) editMessageText(p map[string]string) (any, *apiError) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	id, _ := strconv.ParseInt(p["message_id"], 10, 64)
	if e := checkText(p["text"]); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		if m := &s.sent[i]; m.ID == id && m.ChatID == chat {
			if m.Text == p["text"] {
				return nil, &apiError{400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", 0}
			}
			m.Text = p["text"]
			m.Edits++
			s.wake()
			return map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "text": m.Text,
				"chat": map[string]any{"id": chat, "type": "private"}}, nil
		}
	}
	return nil, &apiError{400, "Bad Request: message to edit not found", 0}
}

// params reads the method parameters from JSON, form or multipart bodies.
func params(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		var m map[string]any
		if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&m); err != nil {
			return nil, err
		}
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			} else {
				b, _ := json.Marshal(v)
				out[k] = string(b)
			}
		}
	case strings.HasPrefix(ct, "multipart/form-data"):
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			if strings.HasSuffix(err.Error(), "EOF") {
				return out, nil // a method without parameters sends an empty body
			}
			return nil, err
		}
		for k, v := range r.MultipartForm.Value {
			out[k] = v[0]
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.Form {
			out[k] = v[0]
		}
	}
	return out, nil
}

func reply(w http.ResponseWriter, result any, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	if e != nil {
		body := map[string]any{"ok": false, "error_code": e.status, "description": e.desc}
		if e.retry > 0 {
			body["parameters"] = map[string]any{"retry_after": e.retry}
		}
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}
