package modelproxy

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

// Dir is the proxy's directory in HERMES_HOME (HERMES_HOME/proxy is the
// egress proxy's, as in Hermes).
func Dir(home string) string { return filepath.Join(home, "model_proxy") }

// TokenPath is where the proxy token is kept (mode 0600).
func TokenPath(home string) string { return filepath.Join(Dir(home), "token") }

// StatePath is where a running proxy records its pid and address.
func StatePath(home string) string { return filepath.Join(Dir(home), "state.json") }

// maxStateFile bounds the token and state files read.
const maxStateFile = 64 << 10

// LoadOrCreateToken returns the proxy token of home, creating one (32
// random bytes, base64url, prefixed "hpx-") on first use. The file is kept
// at mode 0600; a file others can read is tightened.
func LoadOrCreateToken(home string) (string, error) {
	path := TokenPath(home)
	b, err := readSmall(path)
	if err == nil {
		if tok := strings.TrimSpace(string(b)); len(tok) >= 16 {
			if err := os.Chmod(path, 0o600); err != nil {
				return "", fmt.Errorf("proxy token %s: %w", path, err)
			}
			return tok, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("proxy token %s: %w", path, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := "hpx-" + base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(Dir(home), 0o700); err != nil {
		return "", err
	}
	if err := atomicfile.Write(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

// State is what a running proxy records in StatePath.
type State struct {
	PID      int       `json:"pid"`
	Address  string    `json:"address"` // host:port it listens on
	Provider string    `json:"provider"`
	Started  time.Time `json:"started"`
}

// WriteState records s (mode 0600).
func WriteState(home string, s State) error {
	if err := os.MkdirAll(Dir(home), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	return atomicfile.Write(StatePath(home), append(b, '\n'), 0o600)
}

// ReadState returns the recorded state; ok is false when no proxy recorded one.
func ReadState(home string) (s State, ok bool, err error) {
	b, err := readSmall(StatePath(home))
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, false, fmt.Errorf("%s: %w (remove it if no proxy runs)", StatePath(home), err)
	}
	return s, true, nil
}

// RemoveState removes the state file when it still names pid.
func RemoveState(home string, pid int) {
	if s, ok, _ := ReadState(home); ok && s.PID == pid {
		_ = os.Remove(StatePath(home))
	}
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxStateFile)
	n, err := f.Read(b)
	if n == 0 && err != nil {
		return nil, err
	}
	return b[:n], nil
}
