// Package replicatest runs several `hermes gateway run` processes with
// the API server enabled on one PostgreSQL database, each with its own
// HERMES_HOME (as on separate machines), and drives them with the
// official openai npm client (testdata/openaiclient/replicas.mjs) the way
// a load balancer would. The end-to-end test (cmd/hermes) and the
// replicas benchmark (bench/replicas) share it.
package replicatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// Key is the API server key every replica accepts.
const Key = "replica-test-key-0123456789"

// SeenModel answers "seen: " + the user messages of the conversation
// joined by "|": an instant model whose answer shows the whole chain.
func SeenModel(r llmtest.Request) llmtest.Turn {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	var seen []string
	for _, m := range body.Messages {
		if m.Role == "user" {
			seen = append(seen, m.Text())
		}
	}
	return llmtest.Turn{Text: "seen: " + strings.Join(seen, "|")}
}

// Options configure Start.
type Options struct {
	Bin      string // the hermes binary
	N        int    // replicas
	ModelURL string // an OpenAI-compatible model server (llmtest)
	// DatabaseURL and Schema select the shared database.
	DatabaseURL, Schema string
	// LeaseSeconds is database.lease_seconds (0: the default).
	LeaseSeconds int
	// Env is more environment for every replica (chat platform tokens).
	Env []string
}

// Replica is one running gateway process.
type Replica struct {
	Cmd    *exec.Cmd
	Base   string // http://127.0.0.1:PORT/v1
	stderr *syncBuffer
	exited chan struct{}
}

// Stderr is what the process wrote to stderr so far.
func (r *Replica) Stderr() string { return r.stderr.String() }

// Cluster is the running replicas.
type Cluster struct {
	Replicas []*Replica
}

// Start starts o.N replicas and waits until each answers /health; they
// are killed when t ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	c := &Cluster{}
	for i := range o.N {
		r := startOne(t, o, i)
		c.Replicas = append(c.Replicas, r)
	}
	for _, r := range c.Replicas {
		waitHealthy(t, r)
	}
	return c
}

func startOne(t testing.TB, o Options, i int) *Replica {
	t.Helper()
	root := t.TempDir()
	home, userHome := filepath.Join(root, "hermes-home"), filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(home, "skills"), userHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf("model:\n  provider: openrouter\n  default: anthropic/claude-sonnet-4.6\n"+
		"auxiliary:\n  title_generation:\n    enabled: false\ncompression:\n  enabled: false\n"+
		"database:\n  backend: postgres\n  schema: %s\n  lease_seconds: %d\n", o.Schema, o.LeaseSeconds)
	for name, body := range map[string]string{"config.yaml": cfg, "skills/.no-bundled-skills": ""} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := testnet.FreePort(t)
	cmd := exec.Command(o.Bin, "gateway", "run")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + userHome, "HERMES_HOME=" + home, "LANG=C.UTF-8",
		"OPENROUTER_BASE_URL=" + o.ModelURL, "OPENROUTER_API_KEY=sk-or-test-replicas",
		"HERMES_DATABASE_URL=" + o.DatabaseURL,
		"API_SERVER_ENABLED=true", "API_SERVER_PORT=" + strconv.Itoa(port), "API_SERVER_KEY=" + Key}
	cmd.Env = append(cmd.Env, o.Env...)
	r := &Replica{Cmd: cmd, Base: "http://127.0.0.1:" + strconv.Itoa(port) + "/v1", stderr: &syncBuffer{},
		exited: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = r.stderr, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-r.exited
	})
	return r
}

// waitHealthy waits until r answers /health (or exits: fatal).
func waitHealthy(t testing.TB, r *Replica) {
	t.Helper()
	health := strings.TrimSuffix(r.Base, "/v1") + "/health"
	exited := false
	healthy := waitfor.Poll(t, func() bool {
		select {
		case <-r.exited:
			exited = true
			return true
		default:
		}
		resp, err := http.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if exited || !healthy {
		t.Fatalf("replica %s never answered /health (exited: %v):\n%s", r.Base, exited, r.Stderr())
	}
}

// Kill kills replica i with SIGKILL and waits for it to exit.
func (c *Cluster) Kill(i int) {
	r := c.Replicas[i]
	_ = r.Cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

// Result is what replicas.mjs reports.
type Result struct {
	Conversations, Turns                    int
	Answered, Lost, Duplicated, Interleaved int
	Failed, ChainsIntact, MovedFromKilled   int
	Examples                                []json.RawMessage
	Seconds, AnswersPerSecond, P50ms, P99ms float64
}

// ClientOptions configure Drive.
type ClientOptions struct {
	Dir                  string // testdata/openaiclient (with node_modules)
	Conversations, Turns int
	Concurrency          int
	// KillAfterTurn, when > 0, kills replica Kill once every conversation
	// has had that many turns (the client then leaves it out).
	KillAfterTurn, Kill int
}

// Drive runs replicas.mjs against c and returns its report.
func Drive(t testing.TB, c *Cluster, o ClientOptions) Result {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "node_modules", "openai")); err != nil {
		t.Skipf("the openai npm client is not installed: run `npm ci` in %s (.ci/run does)", o.Dir)
	}
	var bases []string
	for _, r := range c.Replicas {
		bases = append(bases, r.Base)
	}
	cmd := exec.Command(node, "replicas.mjs")
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "HERMES_API_BASES="+strings.Join(bases, ","), "HERMES_API_KEY="+Key,
		"CONVERSATIONS="+strconv.Itoa(o.Conversations), "TURNS="+strconv.Itoa(o.Turns),
		"CONCURRENCY="+strconv.Itoa(max(o.Concurrency, 1)), "PAUSE_AFTER="+strconv.Itoa(o.KillAfterTurn))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		line := lines.Bytes()
		if bytes.Contains(line, []byte(`"midway"`)) {
			c.Kill(o.Kill)
			fmt.Fprintf(stdin, "{\"killed\": %d}\n", o.Kill)
			continue
		}
		var res Result
		if err := json.Unmarshal(line, &res); err != nil {
			t.Fatalf("replicas.mjs printed %q: %v\n%s", line, err, stderr.String())
		}
		return res
	}
	t.Fatalf("replicas.mjs ended without a report:\n%s", stderr.String())
	return Result{}
}

// syncBuffer is a bytes.Buffer safe for a process's writes and a test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
