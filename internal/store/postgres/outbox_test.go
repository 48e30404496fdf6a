package postgres_test

import (
	"testing"

	"github.com/hermes-go/hermes/internal/outbox"
	"github.com/hermes-go/hermes/internal/outbox/conformance"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func TestOutboxConformance(t *testing.T) {
	postgrestest.URL(t)
	conformance.Run(t, func(t *testing.T) conformance.Handles {
		x, y := openTwo(t)
		return conformance.Handles{A: x.Outbox(), B: y.Outbox(), Reopen: func() outbox.Queue { return y.Outbox() }}
	})
}
