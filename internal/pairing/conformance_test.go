package pairing_test

import (
	"testing"

	"github.com/hermes-go/hermes/internal/pairing"
	"github.com/hermes-go/hermes/internal/pairing/conformance"
)

func TestFilesConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) (a, b pairing.Docs) {
		home := t.TempDir()
		return pairing.NewFiles(home), pairing.NewFiles(home)
	})
}
