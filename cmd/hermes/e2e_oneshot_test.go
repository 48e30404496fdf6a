package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// usageFile is the --usage-file JSON as a script reads it.
type usageFile struct {
	InputTokens      *int   `json:"input_tokens"`
	OutputTokens     *int   `json:"output_tokens"`
	CacheReadTokens  *int   `json:"cache_read_tokens"`
	CacheWriteTokens *int   `json:"cache_write_tokens"`
	ReasoningTokens  *int   `json:"reasoning_tokens"`
	APICalls         *int   `json:"api_calls"`
	Model            string `json:"model"`
	Provider         string `json:"provider"`
	SessionID        string `json:"session_id"`
	Status           string `json:"status"`
	Completed        *bool  `json:"completed"`
	Error            string `json:"error"`
}

func readUsageFile(t *testing.T, path string) usageFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("--usage-file was not written: %v", err)
	}
	var u usageFile
	if err := json.Unmarshal(data, &u); err != nil {
		t.Fatalf("--usage-file is not JSON: %v\n%s", err, data)
	}
	for name, p := range map[string]*int{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "cache_read_tokens": u.CacheReadTokens,
		"cache_write_tokens": u.CacheWriteTokens, "reasoning_tokens": u.ReasoningTokens, "api_calls": u.APICalls,
	} {
		if p == nil {
			t.Errorf("--usage-file lacks %s:\n%s", name, data)
		}
	}
	if u.Completed == nil {
		t.Fatalf("--usage-file lacks completed:\n%s", data)
	}
	return u
}

func anthropicEnv(e *e2e, cred ...string) []string {
	return append([]string{"ANTHROPIC_BASE_URL=" + e.srv.AnthropicURL}, cred...)
}

// TestOneShotAnthropicUsageFile is seed 002: `hermes -z PROMPT --provider
// anthropic -m MODEL --yolo --usage-file PATH` with one tool call. stdout
// is the final text only; the usage file sums both calls.
func TestOneShotAnthropicUsageFile(t *testing.T) {
	const answer = "There are 3 lines in notes.txt."
	e := newE2E(t,
		llmtest.Turn{
			Reasoning: "Count the lines.",
			ToolCalls: []llmtest.Call{{ID: "toolu_read", Name: "read_file", Args: args(map[string]any{"path": "notes.txt"})}},
			Usage:     llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40},
			ChunkSize: 4,
		},
		llmtest.Turn{Text: answer, Usage: llm.Usage{InputTokens: 200, OutputTokens: 10, CacheReadTokens: 5}},
	)
	e.writeFile("notes.txt", "alpha\nbeta\ngamma\n")
	usagePath := filepath.Join(t.TempDir(), "usage.json")
	res := e.runEnv(anthropicEnv(e, "ANTHROPIC_API_KEY=sk-ant-test-KEY"),
		"-z", "How many lines are in notes.txt?", "--provider", "anthropic", "-m", "claude-test-1", "--yolo",
		"--usage-file", usagePath)
	if res.code != 0 {
		t.Fatalf("want exit 0\n%s", res)
	}
	if res.stdout != answer+"\n" {
		t.Errorf("stdout must be only the final text\nwant %q\ngot  %q", answer+"\n", res.stdout)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want 2 model requests, got %d", len(reqs))
	}
	if reqs[0].Path != "/v1/messages" || reqs[0].Header.Get("X-Api-Key") != "sk-ant-test-KEY" {
		t.Errorf("first request: path %s, x-api-key %q", reqs[0].Path, reqs[0].Header.Get("X-Api-Key"))
	}
	// The tool result went back as a tool_result block holding the file.
	if body := string(reqs[1].Body); !strings.Contains(body, `"tool_result"`) || !strings.Contains(body, "gamma") ||
		!strings.Contains(body, "toolu_read") {
		t.Errorf("second request lacks the read_file tool_result: %s", body)
	}
	// Thinking is sent back with its signature (Anthropic requires it with tool use).
	if body := string(reqs[1].Body); !strings.Contains(body, `"signature":"sig-1"`) {
		t.Errorf("second request lacks the thinking block signature: %s", body)
	}

	u := readUsageFile(t, usagePath)
	if !*u.Completed || u.Status != "completed" {
		t.Errorf("usage file: completed=%v status=%q", *u.Completed, u.Status)
	}
	if *u.APICalls != 2 || *u.InputTokens != 300 || *u.OutputTokens != 30 || *u.CacheReadTokens != 35 || *u.CacheWriteTokens != 40 {
		t.Errorf("usage totals: api_calls=%d input=%d output=%d cache_read=%d cache_write=%d; want 2/300/30/35/40",
			*u.APICalls, *u.InputTokens, *u.OutputTokens, *u.CacheReadTokens, *u.CacheWriteTokens)
	}
	if u.Model != "claude-test-1" || u.Provider != "anthropic" {
		t.Errorf("usage file model=%q provider=%q", u.Model, u.Provider)
	}
	if id := e.latestSessionID(); u.SessionID != id {
		t.Errorf("usage file session_id %q, latest session is %q", u.SessionID, id)
	}
}

// TestOneShotAnthropicAuthToken: with only ANTHROPIC_AUTH_TOKEN the request
// authenticates with `Authorization: Bearer TOKEN` and no x-api-key.
func TestOneShotAnthropicAuthToken(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "pong"})
	res := e.runEnv(anthropicEnv(e, "ANTHROPIC_AUTH_TOKEN=oauth-test-TOKEN"),
		"-z", "ping", "--provider", "anthropic", "-m", "claude-test-1", "--yolo")
	if res.code != 0 || res.stdout != "pong\n" {
		t.Fatalf("want exit 0 and stdout \"pong\\n\"\n%s", res)
	}
	h := e.srv.Requests()[0].Header
	if got := h.Get("Authorization"); got != "Bearer oauth-test-TOKEN" {
		t.Errorf("Authorization = %q, want Bearer oauth-test-TOKEN", got)
	}
	if got := h.Get("X-Api-Key"); got != "" {
		t.Errorf("x-api-key = %q, want none with an auth token", got)
	}
}

// TestOneShotUsageFileOnFailure: a 401 still writes the usage file, marked
// failed, and the run exits non-zero.
func TestOneShotUsageFileOnFailure(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Status: 401, Error: "invalid x-api-key", ErrorType: "authentication_error"})
	usagePath := filepath.Join(t.TempDir(), "out", "usage.json")
	res := e.runEnv(anthropicEnv(e, "ANTHROPIC_API_KEY=sk-ant-wrong"),
		"-z", "hello", "--provider", "anthropic", "-m", "claude-test-1", "--yolo", "--usage-file", usagePath)
	if res.code == 0 {
		t.Fatalf("want a failure on 401\n%s", res)
	}
	if res.stdout != "" {
		t.Errorf("stdout must stay empty on failure, got %q", res.stdout)
	}
	if !strings.Contains(res.stderr, "ANTHROPIC_API_KEY") {
		t.Errorf("the error must name ANTHROPIC_API_KEY\n%s", res)
	}
	u := readUsageFile(t, usagePath)
	if *u.Completed || u.Status != "failed" || u.Error == "" {
		t.Errorf("usage file on failure: completed=%v status=%q error=%q", *u.Completed, u.Status, u.Error)
	}
	if u.Provider != "anthropic" || u.Model != "claude-test-1" || u.SessionID == "" {
		t.Errorf("usage file on failure: provider=%q model=%q session_id=%q", u.Provider, u.Model, u.SessionID)
	}
	if n := len(e.srv.Requests()); n != 1 {
		t.Errorf("401 must fail at once, got %d requests", n)
	}
}
