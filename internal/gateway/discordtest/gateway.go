package discordtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// HeartbeatInterval is the interval HELLO asks for, in milliseconds.
const HeartbeatInterval = 1000

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	T  string          `json:"t,omitempty"`
}

// gateway serves one WebSocket connection: HELLO, then IDENTIFY (READY)
// or RESUME (RESUMED), heartbeats answered with ACKs, dispatches queued
// by SendMessage. A bad token closes with 4004.
func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down := s.down
	s.dials++
	s.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws}
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = ws.Close()
	}()
	if c.write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": HeartbeatInterval}}) != nil {
		return
	}
	ws.SetReadLimit(1 << 20)
	for {
		_ = ws.SetReadDeadline(time.Now().Add(10 * HeartbeatInterval * time.Millisecond))
		var f frame
		if err := ws.ReadJSON(&f); err != nil {
			return
		}
		switch f.Op {
		case 1: // heartbeat
			if c.write(map[string]any{"op": 11}) != nil {
				return
			}
		case 2, 6: // identify, resume
			if !s.handshake(c, f) {
				return
			}
		}
	}
}

// handshake answers IDENTIFY with READY and RESUME with RESUMED, or
// closes with 4004 for a bad token; it reports whether to go on.
func (s *Server) handshake(c *conn, f frame) bool {
	var d struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	_ = json.Unmarshal(f.D, &d)
	s.mu.Lock()
	ok := !s.revoked && strings.TrimPrefix(d.Token, "Bot ") == s.Token
	s.mu.Unlock()
	if !ok {
		c.mu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."), time.Now().Add(time.Second))
		c.mu.Unlock()
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idents++
	s.seq++
	var msg map[string]any
	if f.Op == 2 {
		c.intents = d.Intents
		msg = map[string]any{"op": 0, "t": "READY", "s": s.seq, "d": map[string]any{"v": 9, "user": s.botUser(),
			"session_id": "fake-session", "resume_gateway_url": "", "guilds": []any{},
			"application": map[string]any{"id": s.BotID, "flags": 0}}}
	} else {
		c.intents = IntentMessageContent | (1 << 9) | (1 << 12)
		msg = map[string]any{"op": 0, "t": "RESUMED", "s": s.seq, "d": map[string]any{}}
	}
	if c.write(msg) != nil {
		return false
	}
	c.ready = true
	s.flushLocked()
	return true
}
