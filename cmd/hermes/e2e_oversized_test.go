package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestSessionWithOversizedToolResultResumes: a session holding one tool
// result larger than the whole context window (30,000+ characters, 4,000
// tokens) was stuck: every `-c` got the provider's context-length error,
// compression had nothing to summarise. Now the result is cut in the
// request, the person is told, and the session continues.
func TestSessionWithOversizedToolResultResumes(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "line %03d %s\n", i, strings.Repeat("x", 70))
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "r1", Name: "read_file", Args: `{"path":"big.log"}`}}},
		llmtest.Turn{Text: "read it"},
		llmtest.Turn{Text: "resumed with a cut result"},
	)
	e.writeFile("big.log", b.String())
	e.configureModel()
	// -t file: the default toolsets' schemas (browser, web...) alone would
	// fill most of the 4,000-token window this test shrinks to.
	e.mustRun("chat", "-Q", "--yolo", "-t", "file", "-q", "read big.log")
	// The window turns out to be 4,000 tokens (a local model): the stored
	// session no longer fits.
	e.mustRun("config", "set", "model.context_length", "4000")
	e.srv.ContextLimit(16_000)
	res := e.run("chat", "-Q", "--yolo", "-t", "file", "-c", "-q", "go on")
	if res.code != 0 || !strings.Contains(res.stdout, "resumed with a cut result") {
		t.Fatalf("-c on a session with an oversized tool result:\n%s", res)
	}
	if strings.Count(res.stderr, "too large for the model's context window") != 1 {
		t.Errorf("want one notice on stderr:\n%s", res.stderr)
	}
	spills, _ := filepath.Glob(filepath.Join(e.home, "cache", "context", "*.txt"))
	if len(spills) != 1 {
		t.Fatalf("spill files: %v", spills)
	}
	data, _ := os.ReadFile(spills[0])
	if !strings.Contains(string(data), "line 399") || !strings.Contains(string(data), "line 000") {
		t.Errorf("spill file does not hold the whole result (%d bytes)", len(data))
	}
}
