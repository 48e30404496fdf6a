package sessionkeys_test

import (
	"testing"

	"github.com/hermes-go/hermes/internal/sessionkeys"
	"github.com/hermes-go/hermes/internal/sessionkeys/conformance"
)

// The file index: one write covers several concurrent Sets, and every key
// is in the file when its Set returns (a restarted gateway finds every chat).
func TestFileConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) (a, reopen func() sessionkeys.Index) {
		home := t.TempDir()
		f := sessionkeys.NewFile(home)
		return func() sessionkeys.Index { return f }, func() sessionkeys.Index { return sessionkeys.NewFile(home) }
	})
}
