package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

var _ Queue = (*File)(nil)

// File keeps each platform's queue in HERMES_HOME/gateway/undelivered-
// <platform>.json, rewritten atomically on every change, so a restart
// delivers what a killed run kept; a restart retries at once. Claims live
// in memory: one process owns the files (database.backend: sqlite).
type File struct {
	home string // "" keeps the queue in memory only

	mu    sync.Mutex
	queue map[string]*platformFile
}

type platformFile struct {
	path    string
	entries []fileEntry
	seq     int64
}

// fileEntry is one reply in the file (the format earlier releases wrote).
type fileEntry struct {
	ID       int64           `json:"id"`
	Chat     string          `json:"chat"`
	Parts    json.RawMessage `json:"parts"`
	Created  time.Time       `json:"created"`
	Attempts int             `json:"attempts"`
	NextAt   time.Time       `json:"next_at"`
	LastErr  string          `json:"last_error,omitempty"`

	claimedUntil time.Time
}

// NewFile returns the queues of HERMES_HOME home ("" = memory only).
func NewFile(home string) *File { return &File{home: home, queue: map[string]*platformFile{}} }

// platformLocked returns platform's queue, reading its file the first
// time; f.mu is held.
func (f *File) platformLocked(platform string) (*platformFile, error) {
	if q := f.queue[platform]; q != nil {
		return q, nil
	}
	q := &platformFile{}
	if f.home != "" {
		q.path = filepath.Join(f.home, "gateway", "undelivered-"+platform+".json")
		b, err := os.ReadFile(q.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading undelivered replies: %w", err)
		}
		if err == nil {
			if err := json.Unmarshal(b, &q.entries); err != nil {
				return nil, fmt.Errorf("%s is not valid JSON (%v): fix or remove it (it holds replies not yet delivered)", q.path, err)
			}
		}
		for i := range q.entries {
			q.seq = max(q.seq, q.entries[i].ID)
			q.entries[i].NextAt = time.Time{} // a restart retries at once
		}
	}
	f.queue[platform] = q
	return q, nil
}

func (q *platformFile) save() error {
	if q.path == "" {
		return nil
	}
	if len(q.entries) == 0 {
		if err := os.Remove(q.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(q.entries, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(q.path, b, 0o600)
}

// Add implements Queue.
func (f *File) Add(_ context.Context, platform, chat string, parts json.RawMessage, now, due time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.platformLocked(platform)
	if err != nil {
		return err
	}
	q.seq++
	q.entries = append(q.entries, fileEntry{ID: q.seq, Chat: chat, Parts: append(json.RawMessage(nil), parts...),
		Created: now, NextAt: due})
	return q.save()
}

// Has implements Queue.
func (f *File) Has(_ context.Context, platform, chat string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.platformLocked(platform)
	if err != nil {
		return false, err
	}
	for _, e := range q.entries {
		if e.Chat == chat {
			return true, nil
		}
	}
	return false, nil
}

// Len implements Queue.
func (f *File) Len(_ context.Context, platform string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.platformLocked(platform)
	if err != nil {
		return 0, err
	}
	return len(q.entries), nil
}

// Next implements Queue.
func (f *File) Next(_ context.Context, platform string) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.platformLocked(platform)
	if err != nil {
		return time.Time{}, err
	}
	var t time.Time
	for _, e := range q.entries {
		at := e.NextAt
		if e.claimedUntil.After(at) {
			at = e.claimedUntil
		}
		if t.IsZero() || at.Before(t) {
			t = at
		}
	}
	return t, nil
}

// Claim implements Queue.
func (f *File) Claim(_ context.Context, platform string, now time.Time, lease time.Duration) ([]Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.platformLocked(platform)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Reply
	for i := range q.entries {
		e := &q.entries[i]
		if seen[e.Chat] {
			continue
		}
		seen[e.Chat] = true
		if e.NextAt.After(now) || e.claimedUntil.After(now) {
			continue
		}
		e.claimedUntil = now.Add(lease)
		out = append(out, Reply{ID: e.ID, Platform: platform, Chat: e.Chat, Parts: append(json.RawMessage(nil), e.Parts...),
			Created: e.Created, Attempts: e.Attempts, NextTry: e.NextAt, LastErr: e.LastErr})
	}
	return out, nil
}

// claimedLocked finds platform's claimed reply id; f.mu is held.
func (f *File) claimedLocked(platform string, id int64) (*platformFile, int, error) {
	if q := f.queue[platform]; q != nil {
		for i := range q.entries {
			if q.entries[i].ID == id && !q.entries[i].claimedUntil.IsZero() {
				return q, i, nil
			}
		}
	}
	return nil, 0, ErrNotClaimed
}

// Ack implements Queue.
func (f *File) Ack(_ context.Context, platform string, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, i, err := f.claimedLocked(platform, id)
	if err != nil {
		return err
	}
	q.entries = append(q.entries[:i], q.entries[i+1:]...)
	return q.save()
}

// Retry implements Queue.
func (f *File) Retry(_ context.Context, platform string, id int64, parts json.RawMessage, next time.Time, lastErr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, i, err := f.claimedLocked(platform, id)
	if err != nil {
		return err
	}
	e := &q.entries[i]
	e.Parts, e.NextAt, e.LastErr, e.claimedUntil = append(json.RawMessage(nil), parts...), next, lastErr, time.Time{}
	e.Attempts++
	return q.save()
}
