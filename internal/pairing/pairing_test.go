package pairing

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestRequestApproveRevoke(t *testing.T) {
	home := t.TempDir()
	c := &clock{time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	s := New(home, c.now)
	code, err := s.Request("discord", "42", "ann")
	if err != nil || len(code) != CodeLen || strings.Trim(code, Alphabet) != "" {
		t.Fatalf("code %q, %v", code, err)
	}
	if again, _ := s.Request("discord", "42", "ann"); again != "" {
		t.Fatal("a second request within 10 minutes got a code")
	}
	if s.IsApproved("discord", "42") {
		t.Fatal("approved before approval")
	}
	a, err := s.Approve("discord", strings.ToLower(code))
	if err != nil || a.UserID != "42" {
		t.Fatalf("approve: %+v %v", a, err)
	}
	if !s.IsApproved("discord", "42") || s.IsApproved("slack", "42") {
		t.Fatal("approval not per platform")
	}
	if fi, err := os.Stat(filepath.Join(home, "pairing", "discord-approved.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("approved file: %v %v", fi, err)
	}
	if _, err := s.Approve("discord", code); !errors.Is(err, ErrUnknownCode) {
		t.Fatalf("a used code: %v", err)
	}
	if ok, err := s.Revoke("discord", "42"); !ok || err != nil || s.IsApproved("discord", "42") {
		t.Fatalf("revoke: %v %v", ok, err)
	}
}

func TestCodesExpireAndPendingIsBounded(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	s := New(t.TempDir(), c.now)
	var codes []string
	for _, u := range []string{"1", "2", "3", "4"} {
		code, _ := s.Request("slack", u, "")
		codes = append(codes, code)
	}
	if codes[3] != "" {
		t.Fatal("a fourth pending request got a code")
	}
	c.t = c.t.Add(TTL + time.Minute)
	if _, err := s.Approve("slack", codes[0]); !errors.Is(err, ErrUnknownCode) {
		t.Fatalf("an expired code: %v", err)
	}
	if code, _ := s.Request("slack", "4", ""); code == "" {
		t.Fatal("no code once the old ones expired")
	}
}

func TestWrongCodesLockApproving(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	s := New(t.TempDir(), c.now)
	code, _ := s.Request("telegram", "7", "")
	for range MaxFailures {
		_, _ = s.Approve("telegram", "WRONGONE")
	}
	if _, err := s.Approve("telegram", code); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("after %d wrong codes: %v", MaxFailures, err)
	}
	c.t = c.t.Add(Lockout + time.Minute)
	if _, err := s.Approve("telegram", code); !errors.Is(err, ErrUnknownCode) {
		// the code expired with the lockout (1 h TTL): the user asks again
		t.Fatalf("after the lockout: %v", err)
	}
	code, _ = s.Request("telegram", "7", "")
	if _, err := s.Approve("telegram", code); err != nil {
		t.Fatal(err)
	}
}
