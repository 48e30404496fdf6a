// Package sessionkeys maps the conversation keys of front ends (a chat
// platform's "agent:main:telegram:dm:42", an API client's key) to the
// session ids that continue them. Two implementations pass one conformance
// suite (sessionkeys/conformance): File, HERMES_HOME/sessions/sessions.json
// (database.backend: sqlite), and the session_keys table of
// internal/store/postgres (database.backend: postgres), where a chat
// continues on whichever replica gets its next message.
package sessionkeys

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/renameio/v2"
)

// Index maps conversation keys to session ids. Implementations are safe
// for concurrent use.
type Index interface {
	// Get returns the session id of key ("" when none).
	Get(ctx context.Context, key string) (string, error)
	// Set points key at session id; it returns once the change is durable.
	Set(ctx context.Context, key, id string) error
	// KeyOf returns the key session id was last opened under: the
	// smallest such key, "" when none.
	KeyOf(ctx context.Context, id string) (string, error)
}

var _ Index = (*File)(nil)

// File maps front-end conversation keys to session ids, persisted as
// HERMES_HOME/sessions/sessions.json ({"key": {"session_id": "..."}}, the
// file Hermes Agent's gateway keeps).
//
// Writes are group-committed: set returns once a file holding its change
// is on disk, and one write covers every change made while the previous
// write ran (1,000 new chats arriving together write the file a few
// times, not 1,000 times with an fsync each).
type File struct {
	path string

	mu      sync.Mutex
	loaded  bool
	m       map[string]keyEntry
	changes uint64 // changes made to m so far
	saved   uint64 // changes the file on disk holds

	writeMu sync.Mutex // held while the file is written
}

type keyEntry struct {
	SessionID string `json:"session_id"`
}

// NewFile returns the index of HERMES_HOME home.
func NewFile(home string) *File {
	return &File{path: filepath.Join(home, "sessions", "sessions.json")}
}

func (k *File) load() {
	if k.loaded {
		return
	}
	k.loaded = true
	k.m = map[string]keyEntry{}
	if b, err := os.ReadFile(k.path); err == nil {
		_ = json.Unmarshal(b, &k.m) // a broken index starts over; the sessions stay in state.db
	}
}

// Get implements Index.
func (k *File) Get(_ context.Context, key string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.load()
	return k.m[key].SessionID, nil
}

// Set implements Index.
func (k *File) Set(_ context.Context, key, id string) error {
	k.mu.Lock()
	k.load()
	if k.m[key].SessionID == id {
		k.mu.Unlock()
		return nil
	}
	k.m[key] = keyEntry{SessionID: id}
	k.changes++
	mine := k.changes
	k.mu.Unlock()

	k.writeMu.Lock()
	defer k.writeMu.Unlock()
	k.mu.Lock()
	if k.saved >= mine { // a write that started after our change covered it
		k.mu.Unlock()
		return nil
	}
	b, err := json.MarshalIndent(k.m, "", "  ")
	covers := k.changes
	k.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
		return err
	}
	if err := renameio.WriteFile(k.path, b, 0o600); err != nil {
		return err
	}
	k.mu.Lock()
	k.saved = max(k.saved, covers)
	k.mu.Unlock()
	return nil
}

// KeyOf implements Index: it returns the key the session id was last opened under ("" = none).
func (k *File) KeyOf(_ context.Context, id string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.load()
	best := ""
	for key, e := range k.m {
		if e.SessionID == id && (best == "" || key < best) {
			best = key
		}
	}
	return best, nil
}
