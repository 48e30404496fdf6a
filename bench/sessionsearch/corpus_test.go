package sessionsearch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// corpusMessages is the number of stored messages the benchmarks search;
// HERMES_BENCH_MESSAGES overrides it (e.g. 100000 for a quick run).
func corpusMessages() int {
	if v, err := strconv.Atoi(os.Getenv("HERMES_BENCH_MESSAGES")); err == nil && v > 0 {
		return v
	}
	return 1_000_000
}

const messagesPerSession = 50

// corpusPath returns a state.db holding n generated messages, building it
// on first use. The file is cached in os.TempDir() keyed by size and schema
// version, so reruns start at once; it is built under a temporary name and
// renamed when complete, so an interrupted build is never reused.
func corpusPath(n int, logf func(string, ...any)) (string, error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hermes-bench-state-v%d-g1-%d.db", store.SchemaVersion(), n))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := path + ".building"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	start := time.Now()
	st, err := store.Open(tmp)
	if err != nil {
		return "", err
	}
	g := newGenerator(1)
	ctx := context.Background()
	const sessionsPerTx = 400
	for written := 0; written < n; {
		var batch []store.ImportedSession
		for len(batch) < sessionsPerTx && written < n {
			k := min(messagesPerSession, n-written)
			batch = append(batch, g.session(k))
			written += k
		}
		if _, err := st.Import(ctx, batch); err != nil {
			st.Close()
			return "", err
		}
		if written%(200*sessionsPerTx*messagesPerSession/10) == 0 || written == n {
			logf("generated %d/%d messages in %s", written, n, time.Since(start).Round(time.Second))
		}
	}
	if err := st.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	fi, _ := os.Stat(path)
	logf("corpus %s: %d messages, %d MB, built in %s", path, n, fi.Size()>>20, time.Since(start).Round(time.Second))
	return path, nil
}

// generator writes plausible agent sessions: prompts, assistant answers,
// tool calls and tool output about operating services, with a Zipf-like
// word distribution, rare made-up identifiers, numbers, paths, and some
// CJK text.
type generator struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
	clock time.Time
}

var (
	commonWords = strings.Fields(`the a to of and in is for on with that this it be as at by from not are was
		check logs error service deploy deployment database connection timeout request response server client
		config file path status restart memory disk cpu latency queue worker cache build test release rollback
		version update install package container image pod node cluster network port host proxy certificate
		token retry failed failure success warning info debug trace stack exception panic crash job cron
		backup restore migration schema index query table user session api endpoint route handler upstream
		downstream load balancer metric alert incident runbook oncall page ticket fix patch commit branch
		merge review pipeline ci artifact storage bucket volume mount permission denied refused reset closed
		slow fast high low increase decrease spike drop usage limit quota threshold window interval schedule`)
	services = strings.Fields(`payments-api checkout auth-service nginx postgres redis kafka rabbitmq
		elasticsearch grafana prometheus billing search-indexer notifications gateway scheduler ledger`)
	commands = []string{"systemctl status %s", "journalctl -u %s --since '1 hour ago'", "kubectl logs deploy/%s --tail=200",
		"docker ps --filter name=%s", "df -h /var/lib/%s", "grep -rn ERROR /var/log/%s", "curl -s http://%s:8080/healthz",
		"kubectl rollout status deploy/%s", "tail -n 100 /var/log/%s/error.log", "ps aux | grep %s"}
	cjkPhrases = []string{"数据库连接超时", "服务部署失败", "请检查日志文件", "内存使用率过高", "证书已过期需要续期",
		"ディスク容量が不足しています", "デプロイが失敗しました", "接続がタイムアウトしました", "서버 응답 시간이 느립니다", "배포 롤백이 필요합니다"}
)

func newGenerator(seed uint64) *generator {
	rng := rand.New(rand.NewPCG(seed, 42))
	g := &generator{rng: rng, clock: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	g.words = append(g.words, commonWords...)
	g.words = append(g.words, services...)
	// A long tail of rarer identifiers (hosts, tickets, made-up names).
	syl := strings.Fields("ka ro mi zu te lo ne va shi dor pel tra qui bex fon gar hul jin")
	for i := 0; i < 30000; i++ {
		w := syl[rng.IntN(len(syl))] + syl[rng.IntN(len(syl))] + syl[rng.IntN(len(syl))]
		if i%3 == 0 {
			w += strconv.Itoa(rng.IntN(100))
		}
		g.words = append(g.words, w)
	}
	g.zipf = rand.NewZipf(rng, 1.1, 2, uint64(len(g.words)-1))
	return g
}

func (g *generator) sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.words[g.zipf.Uint64()]
	}
	switch g.rng.IntN(6) {
	case 0:
		ws = append(ws, "on", fmt.Sprintf("db-%d", g.rng.IntN(64)))
	case 1:
		ws = append(ws, fmt.Sprintf("/etc/%s/%s.conf", services[g.rng.IntN(len(services))], g.words[g.zipf.Uint64()]))
	case 2:
		ws = append(ws, fmt.Sprintf("after %d ms", 50+g.rng.IntN(5000)))
	}
	return strings.Join(ws, " ") + "."
}

func (g *generator) text(sentences, words int) string {
	parts := make([]string, sentences)
	for i := range parts {
		parts[i] = g.sentence(words/2 + g.rng.IntN(words))
	}
	if g.rng.IntN(50) == 0 {
		parts = append(parts, cjkPhrases[g.rng.IntN(len(cjkPhrases))])
	}
	return strings.Join(parts, " ")
}

func (g *generator) session(n int) store.ImportedSession {
	g.clock = g.clock.Add(time.Duration(5+g.rng.IntN(120)) * time.Minute)
	s := store.ImportedSession{StartedAt: g.clock, NewSession: store.NewSession{Model: "anthropic/claude-sonnet-4.6",
		Provider: "openrouter", Cwd: "/srv/" + services[g.rng.IntN(len(services))]}}
	if g.rng.IntN(3) == 0 {
		s.Title = fmt.Sprintf("%s %s %d", services[g.rng.IntN(len(services))], g.words[g.zipf.Uint64()], g.clock.UnixNano())
	}
	t := g.clock
	for i := 0; len(s.Messages) < n; i++ {
		t = t.Add(time.Duration(1+g.rng.IntN(20)) * time.Second)
		var m llm.Message
		switch {
		case i%4 == 0:
			m = llm.Message{Role: llm.RoleUser, Content: g.text(1+g.rng.IntN(2), 10)}
		case i%4 == 1:
			svc := services[g.rng.IntN(len(services))]
			m = llm.Message{Role: llm.RoleAssistant, Content: g.text(1, 8), ToolCalls: []llm.ToolCall{{
				ID: fmt.Sprintf("call_%d", i), Name: "terminal",
				Arguments: fmt.Sprintf(`{"command":%q}`, fmt.Sprintf(commands[g.rng.IntN(len(commands))], svc))}}}
		case i%4 == 2:
			m = llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprintf("call_%d", i-1), ToolName: "terminal",
				Content: g.text(2+g.rng.IntN(4), 12)}
		default:
			m = llm.Message{Role: llm.RoleAssistant, Content: g.text(2+g.rng.IntN(3), 14)}
		}
		s.Messages = append(s.Messages, store.ImportedMessage{Message: m, CreatedAt: t})
	}
	g.clock = t
	return s
}
