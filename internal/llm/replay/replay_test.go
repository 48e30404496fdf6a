package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/llm/openai"
)

func call(t *testing.T, p llm.Provider, req llm.Request) (llm.Response, error) {
	t.Helper()
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Accumulate(st, nil)
}

func TestRecordThenReplay(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Turn{Reasoning: "plan", Text: "Reading.", ChunkSize: 3,
			ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path":"runbook.md"}`}, {Name: "terminal", Args: `{"command":`}},
			Usage:     llm.Usage{InputTokens: 10, OutputTokens: 4}},
		llmtest.Turn{Text: "Report written.", Usage: llm.Usage{InputTokens: 30, OutputTokens: 6}},
		llmtest.Turn{Status: 401, Error: "bad key"},
	)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := NewRecorder(openai.New(openai.Config{Name: "openrouter", BaseURL: srv.URL, APIKey: "sk-or-supersecret"}), path)
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "triage the incident"}}}
	var live []llm.Response
	for range 2 {
		r, err := call(t, rec, req)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, r)
	}
	if _, err := call(t, rec, req); err == nil {
		t.Fatal("third call should fail with 401")
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "supersecret") || strings.Contains(strings.ToLower(string(data)), "authorization") {
		t.Fatalf("recording leaks credentials:\n%s", data)
	}
	if !strings.Contains(string(data), `"last":"user: triage the incident"`) {
		t.Errorf("request summary missing:\n%s", data)
	}

	player, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if player.Len() != 3 {
		t.Fatalf("Len = %d", player.Len())
	}
	for i, want := range live {
		got, err := call(t, player, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("replayed call %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	_, err = call(t, player, req)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.Message, "bad key") {
		t.Fatalf("recorded error replayed as %v", err)
	}
	_, err = call(t, player, req)
	if err == nil || !strings.Contains(err.Error(), "has 3 responses") {
		t.Fatalf("past the end: %v", err)
	}
}

func TestScriptedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.jsonl")
	script := `# incident triage
{"text": "I'll read the runbook.", "tool_calls": [{"name": "read_file", "arguments": {"path": "runbook.md"}}, {"name": "terminal", "arguments": "not json"}]}

{"text": "Done.", "usage": {"input_tokens": 5, "output_tokens": 2}}
`
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := call(t, p, llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	tc := r.Message.ToolCalls
	if len(tc) != 2 || tc[0].Arguments != `{"path": "runbook.md"}` || tc[1].Arguments != "not json" || tc[0].ID == tc[1].ID || r.FinishReason != "tool_calls" {
		t.Fatalf("first response = %+v", r)
	}
	r, err = call(t, p, llm.Request{})
	if err != nil || r.Message.Content != "Done." || r.Usage.OutputTokens != 2 || r.FinishReason != "stop" {
		t.Fatalf("second response = %+v, %v", r, err)
	}
}

func TestBadScriptNamesLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	_ = os.WriteFile(path, []byte("{\"text\": \"ok\"}\n{\"txt\": \"typo\"}\n"), 0o644)
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") || !strings.Contains(err.Error(), "txt") {
		t.Fatalf("err = %v", err)
	}
}
