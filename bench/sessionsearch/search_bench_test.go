// Package sessionsearch_test benchmarks session search (Store.Search and the
// session_search tool) over a generated state.db of 1,000,000 messages.
// Run: go test ./bench/sessionsearch -run '^$' -bench . -benchtime 200x
// The first run builds the corpus (several minutes) and caches it in
// os.TempDir(); plain `go test` runs no benchmark and builds nothing.
package sessionsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

func openCorpus(b *testing.B) store.Store {
	b.Helper()
	path, err := corpusPath(corpusMessages(), b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// reportLatency records p50 and p99 of the measured calls in milliseconds.
func reportLatency(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	q := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(0, "ns/op")
}

// queryKinds are the searches an agent makes, each with a few variants so
// caches do not flatter the figures.
var queryKinds = []struct {
	name    string
	sort    store.Sort
	queries []string
	none    bool // the queries match nothing
}{
	{"word", store.SortRelevance, []string{"timeout", "certificate", "rollback", "quota", "oncall"}, false},
	{"rare-word", store.SortRelevance, []string{"kazudor", "mibexfon", "pelquitra", "shigarhul", "lojinte"}, false},
	{"two-words", store.SortRelevance, []string{"nginx timeout", "postgres migration", "redis memory", "kafka queue", "payments-api rollback"}, false},
	{"phrase", store.SortRelevance, []string{`"connection refused"`, `"disk usage"`, `"rollout status"`, `"permission denied"`, `"load balancer"`}, false},
	{"prefix", store.SortRelevance, []string{"deploy*", "migrat*", "certif*", "rollb*", "thresh*"}, false},
	{"word-newest", store.SortNewest, []string{"timeout", "certificate", "rollback", "quota", "oncall"}, false},
	{"substring", store.SortRelevance, []string{"ayments-a", "heckou", "lasticsea", "rometheu", "otificatio"}, false},
	{"cjk", store.SortRelevance, []string{"数据库连接", "部署失败", "デプロイ", "タイムアウト", "롤백이"}, false},
	// Two or three common words together: each word alone is in a large
	// share of the corpus.
	{"common-words", store.SortRelevance, []string{"the error", "check logs", "service status", "the a to", "restart failed"}, false},
	{"special-chars", store.SortRelevance, []string{"payments-api", `/etc/nginx/`, "db-3", `"auth-service" timeout`, "config.conf", `it's`}, false},
	{"no-match", store.SortRelevance, []string{"zqxvbnmw", "timeout zqxvbnmw", `"disk kazudor panic"`, "qqzzy*", "nginx zz"}, true},
}

func BenchmarkStoreSearch(b *testing.B) { searchKinds(b, openCorpus(b)) }

// BenchmarkPostgresSearch runs the same queries over a copy of the corpus
// in PostgreSQL (HERMES_BENCH_DATABASE_URL; skipped without it).
func BenchmarkPostgresSearch(b *testing.B) { searchKinds(b, openPostgresCorpus(b)) }

func searchKinds(b *testing.B, st store.Store) {
	ctx := context.Background()
	for _, k := range queryKinds {
		b.Run(k.name, func(b *testing.B) {
			var lat []time.Duration
			hits := 0
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				res, err := st.Search(ctx, store.SearchOptions{Query: k.queries[i%len(k.queries)], Limit: 5, Sort: k.sort})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(res)
			}
			if hits == 0 && !k.none {
				b.Fatalf("%s queries found nothing: the corpus or the query list is wrong", k.name)
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkSessionSearchTool measures the tool as the agent calls it:
// default limit 5 and role_filter user,assistant, JSON result.
func BenchmarkSessionSearchTool(b *testing.B) {
	st := openCorpus(b)
	tl := tool.NewSessionSearch(st)
	queries := []string{"timeout", "nginx timeout", `"connection refused"`, "deploy*", "kazudor", "certificate rollback"}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		args, _ := json.Marshal(map[string]any{"query": queries[i%len(queries)]})
		start := time.Now()
		res := tl.Run(context.Background(), tool.Call{ID: fmt.Sprint(i), Args: args})
		lat = append(lat, time.Since(start))
		if res.IsError {
			b.Fatal(res.Content)
		}
	}
	reportLatency(b, lat)
}
