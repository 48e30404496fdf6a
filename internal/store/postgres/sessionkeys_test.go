package postgres_test

import (
	"testing"

	"github.com/hermes-go/hermes/internal/sessionkeys"
	"github.com/hermes-go/hermes/internal/sessionkeys/conformance"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func TestSessionKeysConformance(t *testing.T) {
	postgrestest.URL(t)
	conformance.Run(t, func(t *testing.T) (a, reopen func() sessionkeys.Index) {
		x, y := openTwo(t)
		return func() sessionkeys.Index { return x.SessionKeys() }, func() sessionkeys.Index { return y.SessionKeys() }
	})
}
