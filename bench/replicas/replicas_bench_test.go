// Package replicas measures the API server as 1 and as 3 `hermes gateway
// run` replicas on one PostgreSQL (same machine, an instant fake model):
// the official openai npm client runs CONVERSATIONS conversations of
// TURNS turns, chained by previous_response_id and round-robined across
// the replicas, CONCURRENCY requests in flight. It reports answers/s and
// the added latency (request sent → answer received; the model answers at
// once) at p50 and p99, and fails if any answer is lost, duplicated or
// interleaved.
//
//	HERMES_TEST_DATABASE_URL=... go test ./bench/replicas -run '^$' -bench Replicas -benchtime 1x
//	CONVERSATIONS=200 TURNS=5 CONCURRENCY=16 go test ./bench/replicas -run '^$' -bench Replicas -benchtime 1x
package replicas

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/gateway/replicatest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

var (
	buildOnce sync.Once
	bin       string
	buildErr  error
)

// hermesBin builds ./cmd/hermes once per run (or uses HERMES_BIN).
func hermesBin(b *testing.B) string {
	if p := os.Getenv("HERMES_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hermes-bench-replicas-")
		if err != nil {
			buildErr = err
			return
		}
		bin = filepath.Join(dir, "hermes")
		out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hermes").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return bin
}

func BenchmarkReplicas(b *testing.B) {
	convs, turns, conc := envInt("CONVERSATIONS", 60), envInt("TURNS", 5), envInt("CONCURRENCY", 16)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			url, schema := postgrestest.Schema(b)
			srv := llmtest.NewServer(b)
			srv.SetResponder(replicatest.SeenModel)
			srv.ForgetBodies()
			c := replicatest.Start(b, replicatest.Options{Bin: hermesBin(b), N: n, ModelURL: srv.URL, DatabaseURL: url, Schema: schema})
			b.ResetTimer()
			var res replicatest.Result
			for range b.N {
				res = replicatest.Drive(b, c, replicatest.ClientOptions{Dir: "../../internal/gateway/testdata/openaiclient",
					Conversations: convs, Turns: turns, Concurrency: conc})
			}
			b.StopTimer()
			if res.Answered != convs*turns || res.ChainsIntact != convs {
				b.Fatalf("answered %d of %d, %d chains intact of %d: lost %d, duplicated %d, interleaved %d, failed %d; %s",
					res.Answered, convs*turns, res.ChainsIntact, convs, res.Lost, res.Duplicated, res.Interleaved, res.Failed, res.Examples)
			}
			b.ReportMetric(res.AnswersPerSecond, "answers/s")
			b.ReportMetric(res.P50ms, "p50-ms")
			b.ReportMetric(res.P99ms, "p99-ms")
		})
	}
}
