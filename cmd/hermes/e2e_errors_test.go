package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// chatQ runs seed 001's command shape with prompt and returns the result.
func (e *e2e) chatQ(prompt string, extra ...string) result {
	e.t.Helper()
	a := append([]string{"chat", "-Q", "--provider", "openrouter", "--model", "anthropic/claude-sonnet-4.6"}, extra...)
	return e.run(append(a, "-q", prompt)...)
}

// TestUnauthorizedFailsAtOnce: a 401 is not retried; the message names the
// provider's key variable so the user knows what to fix.
func TestUnauthorizedFailsAtOnce(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Status: 401, Error: "No auth credentials found"}, llmtest.Turn{Text: "must not be reached"})
	res := e.chatQ("hi", "--yolo")
	if res.code == 0 {
		t.Fatalf("want a non-zero exit on 401\n%s", res)
	}
	if !strings.Contains(res.stderr, "OPENROUTER_API_KEY") {
		t.Errorf("the error must name OPENROUTER_API_KEY\n%s", res)
	}
	if res.stdout != "" {
		t.Errorf("stdout must be empty on failure, got %q", res.stdout)
	}
	if n := len(e.srv.Requests()); n != 1 {
		t.Errorf("401 must not be retried: %d requests", n)
	}
}

// TestRateLimitRetryAfterThenSuccess: a 429 with Retry-After: 1 is retried
// and the run succeeds.
func TestRateLimitRetryAfterThenSuccess(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{Status: 429, Error: "Rate limit exceeded", RetryAfter: "1"},
		llmtest.Turn{Text: "answer after the retry"},
	)
	res := e.chatQ("hi", "--yolo")
	if res.code != 0 || res.stdout != "answer after the retry\n" {
		t.Fatalf("want exit 0 with the answer after the retry\n%s", res)
	}
	if n := len(e.srv.Requests()); n != 2 {
		t.Errorf("want 2 requests (429, then success), got %d", n)
	}
}

// wires are the two wire formats a run can use, with the flags and
// environment that select them against the fake server.
var wires = []struct {
	name  string
	flags []string
	env   func(e *e2e) []string
}{
	{"openrouter", []string{"--provider", "openrouter", "--model", "anthropic/claude-sonnet-4.6"}, func(*e2e) []string { return nil }},
	{"anthropic", []string{"--provider", "anthropic", "--model", "claude-test-1"}, func(e *e2e) []string {
		return anthropicEnv(e, "ANTHROPIC_API_KEY=sk-ant-test-KEY")
	}},
}

// TestErrorInsideStreamIsReported: an error object inside a 200 stream is
// the run's error, never an empty answer, on both wires.
func TestErrorInsideStreamIsReported(t *testing.T) {
	const msg = "upstream model failed: context assembly fault 7731"
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newE2E(t, llmtest.Turn{Text: "Partial ", ErrorInStream: msg})
			res := e.runEnv(w.env(e), append(append([]string{"chat", "-Q", "--yolo"}, w.flags...), "-q", "hi")...)
			if res.code == 0 {
				t.Fatalf("want a non-zero exit for an error inside the stream\n%s", res)
			}
			if !strings.Contains(res.stderr, msg) {
				t.Errorf("stderr must carry the provider's error %q\n%s", msg, res)
			}
			if strings.TrimSpace(res.stdout) != "" {
				t.Errorf("stdout must be empty, got %q", res.stdout)
			}
		})
	}
}

// TestEmptyToolArgumentsMeanEmptyObject: arguments "" run the tool as {}
// (both wires).
func TestEmptyToolArgumentsMeanEmptyObject(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newE2E(t,
				llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_empty", Name: "todo", Args: ""}}},
				llmtest.Turn{Text: "no todos"},
			)
			res := e.runEnv(w.env(e), append(append([]string{"chat", "-Q", "--yolo"}, w.flags...), "-q", "what is on my todo list?")...)
			if res.code != 0 || res.stdout != "no todos\n" {
				t.Fatalf("want exit 0 and the final answer\n%s", res)
			}
			body := string(e.srv.Requests()[1].Body)
			if !strings.Contains(body, "call_empty") {
				t.Fatalf("no tool result for the call with empty arguments: %s", body)
			}
			if strings.Contains(body, "not a valid JSON") || strings.Contains(body, `"is_error":true`) {
				t.Errorf("empty arguments must run as {}: %s", body)
			}
		})
	}
}

// TestUnparseableToolArgumentsAreNotExecuted: broken JSON arguments are
// not run; the tool result tells the model and the loop goes on (both wires).
func TestUnparseableToolArgumentsAreNotExecuted(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newE2E(t,
				llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_bad", Name: "write_file", Args: `{"path": "made.txt", "content": "x"`}}},
				llmtest.Turn{Text: "I could not write the file."},
			)
			res := e.runEnv(w.env(e), append(append([]string{"chat", "-Q", "--yolo"}, w.flags...), "-q", "write made.txt")...)
			if res.code != 0 || res.stdout != "I could not write the file.\n" {
				t.Fatalf("want exit 0 and the final answer\n%s", res)
			}
			if _, err := os.Stat(filepath.Join(e.workspace, "made.txt")); err == nil {
				t.Errorf("write_file ran with unparseable arguments")
			}
			body := string(e.srv.Requests()[1].Body)
			if !strings.Contains(body, "call_bad") || !strings.Contains(body, "not executed") || !strings.Contains(body, "JSON") {
				t.Errorf("the next request must carry a result for call_bad saying the JSON was invalid and not executed: %s", body)
			}
		})
	}
}

// TestTextToolCallIsExecuted: a Hermes-format <tool_call> written as text
// is recovered and run, also with the closing tag missing, single-quoted
// JSON or "args"; the markup never reaches stdout.
func TestTextToolCallIsExecuted(t *testing.T) {
	for name, text := range map[string]string{
		"hermes format":      `<tool_call>{"name": "read_file", "arguments": {"path": "x"}}</tool_call>`,
		"no closing tag":     `Reading it. <tool_call>{"name": "read_file", "arguments": {"path": "x"}}`,
		"single quotes":      `<tool_call>{'name': 'read_file', 'arguments': {'path': 'x'}}</tool_call>`,
		"args for arguments": `<tool_call>{"name": "read_file", "args": {"path": "x"}}</tool_call>`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newE2E(t, llmtest.Turn{Text: text}, llmtest.Turn{Text: "x says hello"})
			e.writeFile("x", "text-call-content-99\n")
			res := e.chatQ("read x", "--yolo")
			if res.code != 0 || res.stdout != "x says hello\n" {
				t.Fatalf("want exit 0 and only the final answer\n%s", res)
			}
			var found bool
			for _, out := range toolResults(t, e.request(1)) {
				found = found || strings.Contains(out, "text-call-content-99")
			}
			if !found {
				t.Errorf("the text tool call was not executed: no tool result with the file content in %s", e.srv.Requests()[1].Body)
			}
		})
	}
}

// TestTextMentioningJSONIsNotExecuted: an answer that only shows a JSON
// example is the final answer, not a tool call.
func TestTextMentioningJSONIsNotExecuted(t *testing.T) {
	const answer = `To read a file, send {"name": "read_file", "arguments": {"path": "x"}} as the tool call.`
	e := newE2E(t, llmtest.Turn{Text: answer}, llmtest.Turn{Text: "must not be reached"})
	e.writeFile("x", "text-call-content-99\n")
	res := e.chatQ("how do I read a file?", "--yolo")
	if res.code != 0 || res.stdout != answer+"\n" {
		t.Fatalf("want exit 0 and the JSON-mentioning answer verbatim\n%s", res)
	}
	if n := len(e.srv.Requests()); n != 1 {
		t.Errorf("text that only mentions JSON was treated as a tool call: %d requests", n)
	}
}

// TestMaxTurnsEndsWithWrapUpCall: with --max-turns 2 and a model that keeps
// calling tools, two tool rounds run, then one last call without tools
// gives the answer and the run exits 0.
func TestMaxTurnsEndsWithWrapUpCall(t *testing.T) {
	again := func(id string) llmtest.Turn {
		return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: id, Name: "terminal", Args: args(map[string]any{"command": "echo round >> rounds.txt"})}}}
	}
	final := again("call_ignored")
	final.Text = "Budget reached: ran two rounds."
	e := newE2E(t, again("call_1"), again("call_2"), final, llmtest.Turn{Text: "must not be reached"})
	res := e.chatQ("keep going", "--yolo", "--max-turns", "2")
	if res.code != 0 || res.stdout != "Budget reached: ran two rounds.\n" {
		t.Fatalf("want exit 0 and the wrap-up answer\n%s", res)
	}
	reqs := e.requests()
	if len(reqs) != 3 {
		t.Fatalf("want 3 model requests (2 with tools + 1 wrap-up), got %d", len(reqs))
	}
	for i, r := range reqs {
		tools, _ := r["tools"].([]any)
		if i < 2 && len(tools) == 0 {
			t.Errorf("request %d has no tools", i+1)
		}
		if i == 2 && len(tools) != 0 {
			t.Errorf("the wrap-up request offers %d tools, want none", len(tools))
		}
	}
	data, _ := os.ReadFile(filepath.Join(e.workspace, "rounds.txt"))
	if got := strings.Count(string(data), "round"); got != 2 {
		t.Errorf("terminal ran %d times, want 2 (the wrap-up's tool call must not run)", got)
	}
}
