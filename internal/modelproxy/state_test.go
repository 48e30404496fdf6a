package modelproxy

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestTokenKeptPrivateAndReused: the token is created once at mode 0600,
// read back by the next start, and a copy others could read is tightened.
func TestTokenKeptPrivateAndReused(t *testing.T) {
	home := t.TempDir()
	tok, err := LoadOrCreateToken(home)
	if err != nil || !strings.HasPrefix(tok, "hpx-") || len(tok) < 40 {
		t.Fatalf("%q %v", tok, err)
	}
	st, err := os.Stat(TokenPath(home))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st.Mode(), err)
	}
	if err := os.Chmod(TokenPath(home), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreateToken(home)
	if err != nil || again != tok {
		t.Errorf("second start: %q %v, want %q", again, err, tok)
	}
	if st, _ := os.Stat(TokenPath(home)); st.Mode().Perm() != 0o600 {
		t.Errorf("mode after reuse %v", st.Mode())
	}
	other, _ := LoadOrCreateToken(t.TempDir())
	if other == tok {
		t.Error("two homes share a token")
	}
}

func TestStateRoundTrip(t *testing.T) {
	home := t.TempDir()
	if _, ok, err := ReadState(home); ok || err != nil {
		t.Fatalf("no state: %v %v", ok, err)
	}
	s := State{PID: 42, Address: "127.0.0.1:8645", Provider: "ai-gateway", Started: time.Unix(1, 0).UTC()}
	if err := WriteState(home, s); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadState(home)
	if !ok || err != nil || got != s {
		t.Errorf("%+v %v %v", got, ok, err)
	}
	RemoveState(home, 7) // another pid's state stays
	if _, ok, _ := ReadState(home); !ok {
		t.Error("removed another process's state")
	}
	RemoveState(home, 42)
	if _, ok, _ := ReadState(home); ok {
		t.Error("state not removed")
	}
}
