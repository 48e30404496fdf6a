// Package pairing lets an unknown chat user ask for access with a code
// that the operator approves (`hermes pairing approve PLATFORM CODE`), as
// Hermes Agent's gateway does (security.md): 8-character codes from a
// 32-character alphabet without look-alikes, from crypto/rand, valid one
// hour; one request per user per 10 minutes; at most 3 pending per
// platform; 5 failed approvals lock approving for an hour.
//
// State lives in HERMES_HOME/pairing/ (files 0600, written atomically):
// <platform>-pending.json, <platform>-approved.json and _rate_limits.json.
// Every change is a read-modify-write under an exclusive flock(2) on
// pairing/.lock, so the gateway and the CLI may change it at once.
package pairing

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"golang.org/x/sys/unix"
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

// Store is the pairing state of one HERMES_HOME.
type Store struct {
	dir  string
	now  func() time.Time
	rand io.Reader
}

// New returns the store of HERMES_HOME home; now is the clock (nil =
// time.Now).
func New(home string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{dir: filepath.Join(home, "pairing"), now: now, rand: rand.Reader}
}

// ErrUnknownCode: no pending request has the code (or it expired).
var ErrUnknownCode = errors.New("no pending pairing request has this code (codes expire after an hour)")

// Request gives user a pairing code. It returns "" (and no error) when
// the user asked less than RequestEvery ago or MaxPending requests wait
// already: the gateway then stays silent.
func (s *Store) Request(platform, user, name string) (code string, err error) {
	err = s.locked(func() error {
		pending, err := s.pending(platform)
		if err != nil {
			return err
		}
		lim, err := s.limits()
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
		if err := s.write(platform+"-pending.json", pending); err != nil {
			return err
		}
		return s.write("_rate_limits.json", lim)
	})
	return code, err
}

// Approve approves the request with code on platform. A wrong code counts
// towards the lockout.
func (s *Store) Approve(platform, code string) (Approved, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	var out Approved
	err := s.locked(func() error {
		lim, err := s.limits()
		if err != nil {
			return err
		}
		now := s.now()
		f := lim.Failures[platform]
		if now.Before(f.LockedUntil) {
			return fmt.Errorf("approving %s pairing codes is locked until %s after %d wrong codes", platform,
				f.LockedUntil.Local().Format("15:04"), MaxFailures)
		}
		pending, err := s.pending(platform)
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
			if err := s.write("_rate_limits.json", lim); err != nil {
				return err
			}
			return fmt.Errorf("%s: %w", code, ErrUnknownCode)
		}
		approved, err := s.approved(platform)
		if err != nil {
			return err
		}
		delete(pending, code)
		out = Approved{Platform: platform, UserID: r.UserID, UserName: r.UserName, Approved: now}
		approved[r.UserID] = out
		delete(lim.Failures, platform)
		if err := s.write(platform+"-approved.json", approved); err != nil {
			return err
		}
		if err := s.write(platform+"-pending.json", pending); err != nil {
			return err
		}
		return s.write("_rate_limits.json", lim)
	})
	return out, err
}

// Revoke removes user's approval on platform; it reports whether the
// user was approved.
func (s *Store) Revoke(platform, user string) (bool, error) {
	found := false
	err := s.locked(func() error {
		approved, err := s.approved(platform)
		if err != nil {
			return err
		}
		if _, found = approved[user]; !found {
			return nil
		}
		delete(approved, user)
		return s.write(platform+"-approved.json", approved)
	})
	return found, err
}

// ClearPending drops every pending request of platform.
func (s *Store) ClearPending(platform string) error {
	return s.locked(func() error { return s.write(platform+"-pending.json", map[string]Request{}) })
}

// IsApproved reports whether user was approved on platform. A broken or
// unreadable file approves nobody.
func (s *Store) IsApproved(platform, user string) bool {
	approved, err := s.approved(platform)
	if err != nil {
		return false
	}
	_, ok := approved[user]
	return ok
}

// List returns the pending requests (unexpired) and the approved users
// of every platform, sorted.
func (s *Store) List() ([]Request, []Approved, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var reqs []Request
	var apps []Approved
	for _, e := range entries {
		name := e.Name()
		if p, ok := strings.CutSuffix(name, "-pending.json"); ok {
			pending, err := s.pending(p)
			if err != nil {
				return nil, nil, err
			}
			for code, r := range pending {
				r.Platform, r.Code = p, code
				reqs = append(reqs, r)
			}
		} else if p, ok := strings.CutSuffix(name, "-approved.json"); ok {
			approved, err := s.approved(p)
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
func (s *Store) pending(platform string) (map[string]Request, error) {
	m := map[string]Request{}
	if err := s.read(platform+"-pending.json", &m); err != nil {
		return nil, err
	}
	for code, r := range m {
		if s.now().Sub(r.Created) > TTL {
			delete(m, code)
		}
	}
	return m, nil
}

func (s *Store) approved(platform string) (map[string]Approved, error) {
	m := map[string]Approved{}
	return m, s.read(platform+"-approved.json", &m)
}

func (s *Store) limits() (limits, error) {
	l := limits{}
	if err := s.read("_rate_limits.json", &l); err != nil {
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

func (s *Store) read(name string, v any) error {
	path := filepath.Join(s.dir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is not valid JSON (%v): fix or remove it", path, err)
	}
	return nil
}

func (s *Store) write(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.dir, name), append(b, '\n'), 0o600)
}

// locked runs fn holding the pairing lock.
func (s *Store) locked(fn func() error) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }()
	return fn()
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
