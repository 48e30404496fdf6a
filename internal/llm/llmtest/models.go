package llmtest

import (
	"encoding/json"
	"net/http"
)

// Model is one entry of the fake GET /models listing.
type Model struct {
	ID            string `json:"id"`
	ContextLength int    `json:"context_length,omitempty"`
}

// SetModels sets what GET /v1/models lists (OpenRouter's shape: data[] with
// id and context_length). Listing requests are neither recorded in Requests
// nor given a scripted turn.
func (s *Server) SetModels(models ...Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]Model(nil), models...)
}

func (s *Server) serveModels(w http.ResponseWriter) {
	s.mu.Lock()
	data := append([]Model{}, s.models...)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}
