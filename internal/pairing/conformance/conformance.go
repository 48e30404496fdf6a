// Package conformance is the test suite every pairing.Docs passes, run
// through pairing.Store's rules.
package conformance

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/pairing"
)

// Opener returns two handles on one fresh pairing state (two processes,
// or two replicas on one database).
type Opener func(t *testing.T) (a, b pairing.Docs)

// Run runs the suite.
func Run(t *testing.T, open Opener) {
	t.Run("RequestApproveRevokeAcrossHandles", func(t *testing.T) { approve(t, open) })
	t.Run("WrongCodesLockApprovingEverywhere", func(t *testing.T) { lockout(t, open) })
	t.Run("ConcurrentRequestsKeepTheBound", func(t *testing.T) { concurrent(t, open) })
	t.Run("BrokenDocumentIsNamed", func(t *testing.T) { broken(t, open) })
}

func clock() (func() time.Time, func(time.Duration)) {
	var mu sync.Mutex
	now := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

func approve(t *testing.T, open Opener) {
	da, db := open(t)
	now, _ := clock()
	a, b := pairing.NewWith(da, now), pairing.NewWith(db, now)
	code, err := a.Request("telegram", "42", "Ada")
	if err != nil || len(code) != pairing.CodeLen {
		t.Fatalf("Request = %q, %v", code, err)
	}
	if again, err := b.Request("telegram", "42", "Ada"); err != nil || again != "" {
		t.Fatalf("a second request within %s from the other handle = %q, %v; want silence", pairing.RequestEvery, again, err)
	}
	if b.IsApproved("telegram", "42") {
		t.Fatal("approved before approval")
	}
	ap, err := b.Approve("telegram", strings.ToLower(code))
	if err != nil || ap.UserID != "42" || ap.UserName != "Ada" {
		t.Fatalf("Approve = %+v, %v", ap, err)
	}
	if !a.IsApproved("telegram", "42") || a.IsApproved("discord", "42") {
		t.Fatal("the approval is not seen by the other handle, or leaks to another platform")
	}
	reqs, apps, err := a.List()
	if err != nil || len(reqs) != 0 || len(apps) != 1 || apps[0].Platform != "telegram" || apps[0].UserID != "42" {
		t.Fatalf("List = %+v %+v %v", reqs, apps, err)
	}
	if ok, err := a.Revoke("telegram", "42"); err != nil || !ok {
		t.Fatalf("Revoke = %v, %v", ok, err)
	}
	if b.IsApproved("telegram", "42") {
		t.Fatal("still approved after Revoke")
	}
}

func lockout(t *testing.T, open Opener) {
	da, db := open(t)
	now, advance := clock()
	a, b := pairing.NewWith(da, now), pairing.NewWith(db, now)
	code, err := a.Request("slack", "U1", "")
	if err != nil || code == "" {
		t.Fatalf("Request = %q, %v", code, err)
	}
	for i := range pairing.MaxFailures {
		h := []*pairing.Store{a, b}[i%2]
		if _, err := h.Approve("slack", "WRONGCOD"); !errors.Is(err, pairing.ErrUnknownCode) {
			t.Fatalf("wrong code %d: %v, want ErrUnknownCode", i, err)
		}
	}
	if _, err := b.Approve("slack", code); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("the right code after %d wrong ones (counted on both handles): %v, want the lockout", pairing.MaxFailures, err)
	}
	advance(pairing.Lockout + time.Minute) // the code expired meanwhile too
	if _, err := a.Approve("slack", code); !errors.Is(err, pairing.ErrUnknownCode) {
		t.Fatalf("an expired code after the lockout: %v, want ErrUnknownCode", err)
	}
}

func concurrent(t *testing.T, open Opener) {
	da, db := open(t)
	now, _ := clock()
	a, b := pairing.NewWith(da, now), pairing.NewWith(db, now)
	var wg sync.WaitGroup
	codes := make([]string, 12)
	errs := make([]error, 12)
	for i := range codes {
		wg.Go(func() {
			codes[i], errs[i] = []*pairing.Store{a, b}[i%2].Request("discord", fmt.Sprint("user", i), "")
		})
	}
	wg.Wait()
	given := 0
	for i, c := range codes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if c != "" {
			given++
		}
	}
	reqs, _, err := b.List()
	if err != nil || given != pairing.MaxPending || len(reqs) != pairing.MaxPending {
		t.Fatalf("12 users asking at once on two handles got %d codes, %d pending (%v); want %d", given, len(reqs), err, pairing.MaxPending)
	}
}

func broken(t *testing.T, open Opener) {
	da, _ := open(t)
	if err := da.Update(func(tx pairing.Tx) error { return tx.Put("telegram-approved.json", []byte("{not json")) }); err != nil {
		t.Fatal(err)
	}
	s := pairing.NewWith(da, nil)
	if s.IsApproved("telegram", "42") {
		t.Fatal("a broken document approved a user")
	}
	_, _, err := s.List()
	if err == nil || !strings.Contains(err.Error(), da.Where("telegram-approved.json")) {
		t.Fatalf("List over a broken document: %v, want an error naming %s", err, da.Where("telegram-approved.json"))
	}
}
