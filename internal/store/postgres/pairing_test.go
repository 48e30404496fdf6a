package postgres_test

import (
	"testing"

	"github.com/hermes-go/hermes/internal/pairing"
	"github.com/hermes-go/hermes/internal/pairing/conformance"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func TestPairingConformance(t *testing.T) {
	postgrestest.URL(t)
	conformance.Run(t, func(t *testing.T) (a, b pairing.Docs) {
		x, y := openTwo(t)
		return x.Pairing(), y.Pairing()
	})
}
