// Package pairing lets an unknown chat user ask for access with a code
// that the operator approves (`hermes pairing approve PLATFORM CODE`), as
// Hermes Agent's gateway does (security.md): 8-character codes from a
// 32-character alphabet without look-alikes, from crypto/rand, valid one
// hour; one request per user per 10 minutes; at most 3 pending per
// platform; 5 failed approvals lock approving for an hour.
//
// State is three kinds of JSON documents: <platform>-pending.json,
// <platform>-approved.json and _rate_limits.json, kept by a Docs: Files,
// in HERMES_HOME/pairing/ (database.backend: sqlite), or the
// pairing_state table of internal/store/postgres (database.backend:
// postgres), which every replica shares. Every change is a
// read-modify-write under the Docs' exclusive lock, so the gateway and
// the CLI (and every replica) may change it at once.
package pairing

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Limits (Hermes Agent's).
const (
	// Alphabet has no 0/O or 1/I.
	Alphabet     = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	CodeLen      = 8
	TTL          = time.Hour
	RequestEvery = 10 * time.Minute
	MaxPending   = 3
	MaxFailures  = 5
	Lockout      = time.Hour
)

// Request is a pending pairing request.
type Request struct {
	Platform string    `json:"-"`
	Code     string    `json:"-"`
	UserID   string    `json:"user_id"`
	UserName string    `json:"user_name,omitempty"`
	Created  time.Time `json:"created_at"`
}

// Approved is a user approved by pairing.
type Approved struct {
	Platform string    `json:"-"`
	UserID   string    `json:"-"`
	UserName string    `json:"user_name,omitempty"`
	Approved time.Time `json:"approved_at"`
}

type limits struct {
	// Requests: "platform:user" → the time of the user's last request.
	Requests map[string]time.Time `json:"requests"`
	// Failures: platform → failed approvals and the lockout end.
	Failures map[string]failures `json:"failures"`
}

type failures struct {
	Count       int       `json:"count"`
	LockedUntil time.Time `json:"locked_until,omitzero"`
}

// Store is the pairing state of one HERMES_HOME, or of every replica on
// one database: the rules here, the documents in its Docs.
type Store struct {
	docs Docs
	now  func() time.Time
	rand io.Reader
}

// New returns the store of HERMES_HOME home (files under home/pairing);
// now is the clock (nil = time.Now).
func New(home string, now func() time.Time) *Store {
	return NewWith(NewFiles(home), now)
}

// NewWith returns a store keeping its documents in docs (the database's
// with database.backend postgres).
func NewWith(docs Docs, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{docs: docs, now: now, rand: rand.Reader}
}

// ErrUnknownCode: no pending request has the code (or it expired).
var ErrUnknownCode = errors.New("no pending pairing request has this code (codes expire after an hour)")

// Request gives user a pairing code. It returns "" (and no error) when
// the user asked less than RequestEvery ago or MaxPending requests wait
// already: the gateway then stays silent.
func (s *Store) Request(platform, user, name string) (code string, err error) {
	err = s.docs.Update(func(tx Tx) error {
		pending, err := s.pending(tx, platform)
		if err != nil {
			return err
		}
		lim, err := s.limits(tx)
		if err != nil {
			return err
		}
		now := s.now()
		key := platform + ":" + user
		if last, ok := lim.Requests[key]; ok && now.Sub(last) < RequestEvery {
			return nil
		}
		for c, r := range pending {
			if r.UserID == user {
				delete(pending, c) // a new code replaces the user's old one
			}
		}
		if len(pending) >= MaxPending {
			return nil
		}
		if code, err = s.newCode(); err != nil {
			return err
		}
		pending[code] = Request{UserID: user, UserName: name, Created: now}
		lim.Requests[key] = now
		if err := s.write(tx, platform+"-pending.json", pending); err != nil {
			return err
		}
		return s.write(tx, "_rate_limits.json", lim)
	})
	return code, err
}

// Approve approves the request with code on platform. A wrong code counts
// towards the lockout.
func (s *Store) Approve(platform, code string) (Approved, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	var out Approved
	wrong := false // a wrong code: its failure is counted (committed), then reported
	err := s.docs.Update(func(tx Tx) error {
		lim, err := s.limits(tx)
		if err != nil {
			return err
		}
		now := s.now()
		f := lim.Failures[platform]
		if now.Before(f.LockedUntil) {
			return fmt.Errorf("approving %s pairing codes is locked until %s after %d wrong codes", platform,
				f.LockedUntil.Local().Format("15:04"), MaxFailures)
		}
		pending, err := s.pending(tx, platform)
		if err != nil {
			return err
		}
		r, ok := pending[code]
		if !ok {
			f.Count++
			if f.Count >= MaxFailures {
				f.Count, f.LockedUntil = 0, now.Add(Lockout)
			}
			lim.Failures[platform] = f
			wrong = true
			return s.write(tx, "_rate_limits.json", lim)
		}
		approved, err := s.approved(tx, platform)
		if err != nil {
			return err
		}
		delete(pending, code)
		out = Approved{Platform: platform, UserID: r.UserID, UserName: r.UserName, Approved: now}
		approved[r.UserID] = out
		delete(lim.Failures, platform)
		if err := s.write(tx, platform+"-approved.json", approved); err != nil {
			return err
		}
		if err := s.write(tx, platform+"-pending.json", pending); err != nil {
			return err
		}
		return s.write(tx, "_rate_limits.json", lim)
	})
	if err == nil && wrong {
		return Approved{}, fmt.Errorf("%s: %w", code, ErrUnknownCode)
	}
	return out, err
}

// Revoke removes user's approval on platform; it reports whether the
// user was approved.
func (s *Store) Revoke(platform, user string) (bool, error) {
	found := false
	err := s.docs.Update(func(tx Tx) error {
		approved, err := s.approved(tx, platform)
		if err != nil {
			return err
		}
		if _, found = approved[user]; !found {
			return nil
		}
		delete(approved, user)
		return s.write(tx, platform+"-approved.json", approved)
	})
	return found, err
}

// ClearPending drops every pending request of platform.
func (s *Store) ClearPending(platform string) error {
	return s.docs.Update(func(tx Tx) error { return s.write(tx, platform+"-pending.json", map[string]Request{}) })
}

// IsApproved reports whether user was approved on platform. A broken or
// unreadable file approves nobody.
func (s *Store) IsApproved(platform, user string) bool {
	approved, err := s.approved(s.docs, platform)
	if err != nil {
		return false
	}
	_, ok := approved[user]
	return ok
}

// List returns the pending requests (unexpired) and the approved users
// of every platform, sorted.
func (s *Store) List() ([]Request, []Approved, error) {
	names, err := s.docs.Names()
	if err != nil {
		return nil, nil, err
	}
	var reqs []Request
	var apps []Approved
	for _, name := range names {
		if p, ok := strings.CutSuffix(name, "-pending.json"); ok {
			pending, err := s.pending(s.docs, p)
			if err != nil {
				return nil, nil, err
			}
			for code, r := range pending {
				r.Platform, r.Code = p, code
				reqs = append(reqs, r)
			}
		} else if p, ok := strings.CutSuffix(name, "-approved.json"); ok {
			approved, err := s.approved(s.docs, p)
			if err != nil {
				return nil, nil, err
			}
			for id, a := range approved {
				a.Platform, a.UserID = p, id
				apps = append(apps, a)
			}
		}
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Created.Before(reqs[j].Created) })
	sort.Slice(apps, func(i, j int) bool {
		return apps[i].Platform+apps[i].UserID < apps[j].Platform+apps[j].UserID
	})
	return reqs, apps, nil
}

// pending reads platform's unexpired requests.
func (s *Store) pending(r Reader, platform string) (map[string]Request, error) {
	m := map[string]Request{}
	if err := s.read(r, platform+"-pending.json", &m); err != nil {
		return nil, err
	}
	for code, r := range m {
		if s.now().Sub(r.Created) > TTL {
			delete(m, code)
		}
	}
	return m, nil
}

func (s *Store) approved(r Reader, platform string) (map[string]Approved, error) {
	m := map[string]Approved{}
	return m, s.read(r, platform+"-approved.json", &m)
}

func (s *Store) limits(r Reader) (limits, error) {
	l := limits{}
	if err := s.read(r, "_rate_limits.json", &l); err != nil {
		return l, err
	}
	if l.Requests == nil {
		l.Requests = map[string]time.Time{}
	}
	if l.Failures == nil {
		l.Failures = map[string]failures{}
	}
	return l, nil
}

func (s *Store) read(r Reader, name string, v any) error {
	b, err := r.Get(name)
	if err != nil || b == nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is not valid JSON (%v): fix or remove it", s.docs.Where(name), err)
	}
	return nil
}

func (s *Store) write(tx Tx, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return tx.Put(name, append(b, '\n'))
}

// newCode draws CodeLen characters of Alphabet uniformly (32 divides 256).
func (s *Store) newCode() (string, error) {
	b := make([]byte, CodeLen)
	if _, err := io.ReadFull(s.rand, b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = Alphabet[int(b[i])%len(Alphabet)]
	}
	return string(b), nil
}
