package main_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestFlatStreamErrorShowsProviderWords: a LiteLLM-style error chunk
// ({"choices": null, "error_type": …, "error_message": …} then EOF) ends
// the run at once with the provider's words; a 400-class error is not
// retried (it was retried 4 times over 12 s and reported as "empty
// response").
func TestFlatStreamErrorShowsProviderWords(t *testing.T) {
	flat := func(msg string) llmtest.Turn {
		return llmtest.Turn{RawBody: `data: {"id":"x","choices":null,"error_type":"BadRequestError","error_message":"` + msg + `"}` + "\n\n"}
	}
	for _, c := range []struct {
		msg      string
		requests int // a context overflow is sent once more with large tool results cut
	}{{"invalid tool schema for terminal", 1}, {"context length exceeded: 9000 > 4096", 2}} {
		t.Run(c.msg, func(t *testing.T) {
			e := newE2E(t, flat(c.msg), flat(c.msg), flat(c.msg), flat(c.msg))
			res := e.chatQ("hi", "--yolo")
			if res.code == 0 {
				t.Fatalf("want a non-zero exit\n%s", res)
			}
			if !strings.Contains(res.stderr, c.msg) {
				t.Errorf("stderr must carry the provider's words\n%s", res)
			}
			if strings.Contains(res.stderr, "empty response") {
				t.Errorf("reported as an empty response\n%s", res)
			}
			if n := len(e.srv.Requests()); n != c.requests {
				t.Errorf("a 400-class stream error was sent %d times, want %d", n, c.requests)
			}
		})
	}
}

// TestOversizedPromptDoesNotStickSession: a prompt larger than the
// model's window fails with the provider's context error, and a short
// follow-up with -c works: the failed prompt is not re-sent (hermes says so).
func TestOversizedPromptDoesNotStickSession(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "short answer"})
	e.configureModel()
	e.srv.ContextLimit(30_000)                                   // the system prompt and tools take about 16 KB
	huge := strings.Repeat("a very long pasted log line ", 1500) // 42 KB
	res := e.run("chat", "-Q", "--yolo", "-q", huge)
	if res.code == 0 || !strings.Contains(res.stderr, "context_length_exceeded") {
		t.Fatalf("the oversized prompt must fail with the provider's error\n%s", res)
	}
	if !strings.Contains(res.stderr, "will not be sent again") {
		t.Errorf("the person must be told what happens to the prompt\n%s", res.stderr)
	}
	res = e.run("chat", "-Q", "--yolo", "-c", "-q", "short follow-up")
	if res.code != 0 || res.stdout != "short answer\n" {
		t.Fatalf("the follow-up must work\n%s", res)
	}
	reqs := e.srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if strings.Contains(last, "a very long pasted log line") || !strings.Contains(last, "short follow-up") {
		t.Errorf("the follow-up request re-sent the failed prompt (%d bytes)", len(last))
	}
}

// TestEmptyAnswerIsRetriedOnceThenReported: content "", no tool call,
// finish_reason stop is asked for once more; a second empty answer is an
// error on stderr with a non-zero exit (-Q and -z).
func TestEmptyAnswerIsRetriedOnceThenReported(t *testing.T) {
	for _, flag := range []string{"-Q", "-z"} {
		t.Run(flag, func(t *testing.T) {
			e := newE2E(t, llmtest.Turn{}, llmtest.Turn{})
			e.configureModel()
			args := []string{"chat", "--yolo", "-Q", "-q", "hi"}
			if flag == "-z" {
				args = []string{"-z", "hi", "--yolo"}
			}
			res := e.run(args...)
			if res.code == 0 || !strings.Contains(res.stderr, "the model returned an empty answer") {
				t.Fatalf("want a non-zero exit and the empty-answer error\n%s", res)
			}
			if n := len(e.srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2 (one retry)", n)
			}
		})
	}
	e := newE2E(t, llmtest.Turn{}, llmtest.Turn{Text: "second try"})
	res := e.chatQ("hi", "--yolo")
	if res.code != 0 || res.stdout != "second try\n" {
		t.Fatalf("the retry's answer must be printed\n%s", res)
	}
}

// TestToolCallAfterReasoningCloseRuns: a call written as text after a
// reasoning close, without its opening tag, runs as a tool call and is
// not printed as the answer.
func TestToolCallAfterReasoningCloseRuns(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{Text: `I should write the note.</think>{"name": "write_file", "arguments": {"path": "note.txt", "content": "from text"}}</tool_call>`},
		llmtest.Turn{Text: "Written."},
	)
	res := e.chatQ("write a note", "--yolo")
	if res.code != 0 || res.stdout != "Written.\n" {
		t.Fatalf("want the final answer only\n%s", res)
	}
	if len(toolResults(t, e.request(1))) != 1 {
		t.Errorf("the call did not run: %v", e.request(1)["messages"])
	}
}

// TestWhitespaceArgumentsAreStoredAsRun: arguments "   " run as {} and are
// stored and re-sent as {}, in this turn and after -c.
func TestWhitespaceArgumentsAreStoredAsRun(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_ws", Name: "todo", Args: "   "}}},
		llmtest.Turn{Text: "no todos"},
		llmtest.Turn{Text: "still none"},
	)
	e.configureModel()
	e.mustRun("chat", "-Q", "--yolo", "-q", "what is on my todo list?")
	e.mustRun("chat", "-Q", "--yolo", "-c", "-q", "and now?")
	for i := 1; i <= 2; i++ {
		found := false
		for _, m := range chatMessages(t, e.request(i)) {
			for _, tc := range m.ToolCalls {
				if tc.ID == "call_ws" {
					found = true
					if tc.Function.Arguments != "{}" {
						t.Errorf("request %d re-sent arguments %q, want {}", i, tc.Function.Arguments)
					}
				}
			}
		}
		if !found {
			t.Errorf("request %d lacks the call", i)
		}
	}
	export := e.mustRun("sessions", "export", e.latestSessionID(), "--format", "jsonl")
	if !strings.Contains(export.stdout, `"arguments":"{}"`) || strings.Contains(export.stdout, `"arguments":"   "`) {
		t.Errorf("the stored call must hold the arguments it ran with:\n%s", export.stdout)
	}
}

// TestBareSGRAnswerOnTerminal: colour sequences without their ESC byte in
// the model's answer ("[32mPASS[0m") are removed on a terminal, streamed
// (split between deltas) or with -Q, as they are from tool output.
func TestBareSGRAnswerOnTerminal(t *testing.T) {
	const answer = "[32mPASS[0m all 12 tests; see [the log](log.txt)"
	e := newE2E(t, llmtest.Turn{Text: answer, ChunkSize: 2}, llmtest.Turn{Text: answer})
	e.configureModel()
	for _, quiet := range []bool{false, true} {
		master, slave := openPTY(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		args := []string{"chat", "--yolo", "-q", "hi"}
		if quiet {
			args = append(args, "-Q")
		}
		cmd, _, stderr := e.command(ctx, nil, args...)
		cmd.Stdout = slave
		var out bytes.Buffer
		done := make(chan struct{})
		go func() { _, _ = io.Copy(&out, master); close(done) }()
		err := cmd.Run()
		slave.Close()
		<-done // the master reads EOF once the slave's last holder closed it
		master.Close()
		cancel()
		if err != nil {
			t.Fatalf("hermes %v: %v\n%s", args, err, stderr)
		}
		got := strings.ReplaceAll(out.String(), "\r\n", "\n")
		if want := "PASS all 12 tests; see [the log](log.txt)\n"; got != want {
			t.Errorf("quiet=%v: terminal got %q, want %q", quiet, got, want)
		}
	}
}

// TestConfigCheckRefusesUnknownToolsetKeys: platform_toolsets and
// agent.disabled_toolsets are used, so `config check` names a mistyped
// platform or toolset in them (it said nothing).
func TestConfigCheckRefusesUnknownToolsetKeys(t *testing.T) {
	e := newE2E(t)
	cfg := filepath.Join(e.home, "config.yaml")
	if err := os.WriteFile(cfg, []byte("platform_toolsets:\n  acp: [file, terminl]\nagent:\n  disabled_toolsets: [terminal]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := e.run("config", "check")
	if res.code == 0 || !strings.Contains(res.stdout+res.stderr, "platform_toolsets.acp: unknown toolset terminl") {
		t.Fatalf("want the mistyped toolset named\n%s", res)
	}
	if err := os.WriteFile(cfg, []byte("platform_toolsets:\n  acp: [file]\nagent:\n  disabled_toolsets: [terminal]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := e.run("config", "check"); res.code != 0 {
		t.Fatalf("a valid platform_toolsets is refused\n%s", res)
	}
}
