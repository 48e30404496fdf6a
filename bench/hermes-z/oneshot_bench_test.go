// Package hermesz_test benchmarks a whole `hermes -z` run: the built binary
// against the in-repo fake model server on loopback (internal/llm/llmtest),
// one read_file tool call and a final answer per run, with a persistent
// HERMES_HOME as a user has. It reports wall time per run (median, p90)
// and the children's peak resident set size (getrusage ru_maxrss).
//
// Run: go test ./bench/hermes-z -run '^$' -bench . -benchtime 30x
// With HERMES_BENCH_BIN=/path/to/hermes it times that binary instead of
// building one (to compare builds: `go build -trimpath -ldflags "-s -w"`).
// Plain `go test` runs no benchmark (TestMain still builds hermes, ~1 s warm).
package hermesz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// hermesBin is the binary built by TestMain, or HERMES_BENCH_BIN when set
// (a prebuilt binary, e.g. to compare two builds in the same run).
var hermesBin string

func TestMain(m *testing.M) {
	if bin := os.Getenv("HERMES_BENCH_BIN"); bin != "" {
		hermesBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "hermes-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hermesBin = filepath.Join(dir, "hermes")
	build := exec.Command("go", "build", "-o", hermesBin, "github.com/hermes-go/hermes/cmd/hermes")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hermes:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// BenchmarkOneShotOneToolCall times `hermes -z PROMPT --provider anthropic
// -m MODEL --yolo` end to end with one read_file call. Metrics: ms-median
// and ms-p90 (wall time per run), cpu-ms-median (user+system time of
// hermes and its children), maxrss-MB (largest ru_maxrss of any run).
func BenchmarkOneShotOneToolCall(b *testing.B) {
	readArgs, _ := json.Marshal(map[string]string{"path": "notes.txt"})
	benchOneShot(b, "read_file", string(readArgs), "")
}

// BenchmarkOneShotTerminalCall is the same turn with one terminal command
// (`wc -l notes.txt`), with the local guard on (terminal.local_sandbox
// workspace-write, the default: Landlock ruleset, supervisor) and off, to
// measure what the guard adds per command.
func BenchmarkOneShotTerminalCall(b *testing.B) {
	args, _ := json.Marshal(map[string]string{"command": "wc -l notes.txt"})
	for _, mode := range []string{"workspace-write", "off"} {
		b.Run("local_sandbox="+mode, func(b *testing.B) {
			benchOneShot(b, "terminal", string(args), "terminal:\n  local_sandbox: "+mode+"\n")
		})
	}
}

// benchOneShot runs the one-tool turn b.N times with config.yaml holding
// configYAML.
func benchOneShot(b *testing.B, tool, toolArgs, configYAML string) {
	root := b.TempDir()
	home, work := filepath.Join(root, "hermes-home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if configYAML != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(configYAML), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	srv := llmtest.Start()
	defer srv.Close()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + root, "HERMES_HOME=" + home, "LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + srv.AnthropicURL, "ANTHROPIC_API_KEY=sk-ant-bench",
	}

	var wall, cpu []time.Duration
	var maxRSS int64 // KiB, as Linux reports ru_maxrss
	b.ResetTimer()
	for range b.N {
		srv.Add(
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: tool, Args: toolArgs}}},
			llmtest.Turn{Text: "notes.txt has 3 lines."},
		)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, hermesBin, "-z", "How many lines are in notes.txt?",
			"--provider", "anthropic", "-m", "claude-bench", "--yolo")
		cmd.Dir, cmd.Env = work, env
		start := time.Now()
		out, err := cmd.Output()
		elapsed := time.Since(start)
		cancel()
		if err != nil || strings.TrimSpace(string(out)) != "notes.txt has 3 lines." {
			b.Fatalf("hermes -z: %v, stdout %q", err, out)
		}
		wall = append(wall, elapsed)
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxRSS = max(maxRSS, ru.Maxrss)
		}
	}
	b.StopTimer()
	slices.Sort(wall)
	slices.Sort(cpu)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// CPU time of hermes and its reaped children: steadier than wall time
	// on a loaded machine.
	b.ReportMetric(ms(cpu[len(cpu)/2]), "cpu-ms-median")
	b.ReportMetric(ms(wall[len(wall)/2]), "ms-median")
	b.ReportMetric(ms(wall[min(len(wall)-1, len(wall)*9/10)]), "ms-p90")
	b.ReportMetric(float64(maxRSS)/1024, "maxrss-MB")
}
