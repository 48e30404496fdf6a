// Package storeappend_test measures one message append (a committed
// transaction that updates the session and both search indexes) on each
// session store: SQLite (HERMES_HOME/state.db) and PostgreSQL
// (HERMES_BENCH_DATABASE_URL, a fresh schema; skipped without it).
// Run: go test ./bench/storeappend -run '^$' -bench . -benchtime 2000x
package storeappend_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
)

func BenchmarkAppend(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		appendLatency(b, st)
	})
	b.Run("postgres", func(b *testing.B) {
		url := os.Getenv("HERMES_BENCH_DATABASE_URL")
		if url == "" {
			b.Skip("set HERMES_BENCH_DATABASE_URL to a PostgreSQL database to benchmark it")
		}
		var r [6]byte
		_, _ = rand.Read(r[:])
		schema := "bench_append_" + hex.EncodeToString(r[:])
		ctx := context.Background()
		st, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			_, _ = st.Pool().Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			st.Close()
		}()
		appendLatency(b, st)
	})
}

// appendLatency appends a typical tool-call message per iteration and
// reports p50 and p99 in milliseconds.
func appendLatency(b *testing.B, st store.Store) {
	ctx := context.Background()
	s, err := st.CreateSession(ctx, store.NewSession{})
	if err != nil {
		b.Fatal(err)
	}
	m := llm.Message{Role: llm.RoleAssistant, Content: "Checking the payments-api rollout before restarting nginx on db-3.",
		ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "terminal", Arguments: `{"command":"kubectl rollout status deploy/payments-api"}`}}}
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := st.AppendMessage(ctx, s.ID, m); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
}
