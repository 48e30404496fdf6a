package cron_test

import (
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/cron/conformance"
)

func TestFileStoreConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, n int, now func() time.Time) []cron.Jobs {
		home := t.TempDir()
		out := make([]cron.Jobs, n)
		for i := range out {
			out[i] = cron.NewStore(home, now)
		}
		return out
	})
}
