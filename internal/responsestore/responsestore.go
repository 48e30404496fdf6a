// Package responsestore keeps the OpenAI Responses API objects the API
// server answered, so that a later request's previous_response_id finds
// the session to continue and GET /v1/responses/{id} the object
// (https://platform.openai.com/docs/api-reference/responses/get).
//
// Two implementations pass one conformance suite (responsestore/conformance):
// Memory, a bounded map in one process (database.backend: sqlite), and the
// PostgreSQL table of internal/store/postgres (database.backend: postgres),
// where every replica of the API server resolves every id.
package responsestore

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
)

// ErrNotFound is returned by Get for an id that is not stored (never
// created, deleted, or forgotten past the bound).
var ErrNotFound = errors.New("response not found")

// Response is one stored Responses API object.
type Response struct {
	// ID is the object's id ("resp_…").
	ID string
	// SessionID is the hermes session the response belongs to; a request
	// naming ID as previous_response_id continues it.
	SessionID string
	// Body is the response object as served (JSON).
	Body json.RawMessage
}

// Store keeps responses by id. Implementations are safe for concurrent use.
type Store interface {
	// Put stores r, replacing a response with the same id.
	Put(ctx context.Context, r Response) error
	// Get returns the response id, or ErrNotFound.
	Get(ctx context.Context, id string) (Response, error)
	// Delete removes the response id and reports whether it was stored.
	Delete(ctx context.Context, id string) (bool, error)
}

// Memory is a Store in this process's memory that keeps at most its bound
// of responses, forgetting the oldest first.
type Memory struct {
	max   int
	mu    sync.Mutex
	byID  map[string]Response
	order []string // ids, oldest first (may hold deleted ids)
}

// NewMemory returns a Memory keeping at most max responses (max <= 0 = 1000).
func NewMemory(max int) *Memory {
	if max <= 0 {
		max = 1000
	}
	return &Memory{max: max, byID: map[string]Response{}}
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, r Response) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.Body = append(json.RawMessage(nil), r.Body...)
	if _, ok := m.byID[r.ID]; !ok {
		m.order = append(m.order, r.ID)
	}
	m.byID[r.ID] = r
	for len(m.byID) > m.max && len(m.order) > 0 {
		delete(m.byID, m.order[0])
		m.order = m.order[1:]
	}
	if len(m.order) > 2*m.max { // drop ids Delete left behind
		kept := m.order[:0]
		for _, id := range m.order {
			if _, ok := m.byID[id]; ok {
				kept = append(kept, id)
			}
		}
		m.order = kept
	}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byID[id]
	if !ok {
		return Response{}, ErrNotFound
	}
	r.Body = append(json.RawMessage(nil), r.Body...)
	return r, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.byID[id]
	delete(m.byID, id)
	return ok, nil
}
