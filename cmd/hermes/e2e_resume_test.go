package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/testio"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// hasExchange reports whether an OpenAI-wire request carries the user
// message and the assistant answer of an earlier turn.
func hasExchange(t *testing.T, body map[string]any, user, answer string) bool {
	t.Helper()
	var sawUser, sawAnswer bool
	for _, m := range chatMessages(t, body) {
		sawUser = sawUser || (m.Role == "user" && strings.Contains(m.Text(), user))
		sawAnswer = sawAnswer || (m.Role == "assistant" && strings.Contains(m.Text(), answer))
	}
	return sawUser && sawAnswer
}

// lastUserText returns the content of the request's last user message.
func lastUserText(t *testing.T, body map[string]any) string {
	t.Helper()
	msgs := chatMessages(t, body)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Text()
		}
	}
	return ""
}

// uniquePrefix returns the shortest prefix of id (at least 8 bytes) that is
// not a prefix of other.
func uniquePrefix(id, other string) string {
	for n := 8; n < len(id); n++ {
		if !strings.HasPrefix(other, id[:n]) {
			return id[:n]
		}
	}
	return id
}

// TestResumeSendsOldHistory: -c continues the latest session, --resume
// takes an id prefix or a title, and each time the model sees the earlier
// exchange before the new prompt.
func TestResumeSendsOldHistory(t *testing.T) {
	const (
		fact   = "My favourite colour is teal-4242."
		noted  = "Noted: teal-4242."
		other  = "Unrelated question about llamas."
		llamas = "Llamas hum."
	)
	e := newE2E(t,
		llmtest.Turn{Text: noted},
		llmtest.Turn{Text: "teal-4242"},
		llmtest.Turn{Text: llamas},
		llmtest.Turn{Text: "still teal-4242"},
		llmtest.Turn{Text: "teal-4242, by title"},
	)
	e.configureModel()
	e.mustRun("chat", "-Q", "--yolo", "-q", fact)
	first := e.latestSessionID()

	res := e.mustRun("chat", "-Q", "--yolo", "-c", "-q", "What is my favourite colour?")
	if res.stdout != "teal-4242\n" {
		t.Errorf("-c stdout = %q", res.stdout)
	}
	req := e.request(1)
	if !hasExchange(t, req, fact, noted) || lastUserText(t, req) != "What is my favourite colour?" {
		t.Errorf("-c did not send the old history before the new prompt: %s", e.srv.Requests()[1].Body)
	}
	if id := e.latestSessionID(); id != first {
		t.Errorf("-c created session %s instead of continuing %s", id, first)
	}

	// A second, newer session: -c would now pick it, --resume must not.
	e.mustRun("chat", "-Q", "--yolo", "-q", other)
	second := e.latestSessionID()
	if second == first {
		t.Fatalf("the third run did not start a new session")
	}
	e.mustRun("chat", "-Q", "--yolo", "--resume", uniquePrefix(first, second), "-q", "Colour again?")
	req = e.request(3)
	if !hasExchange(t, req, fact, noted) || hasExchange(t, req, other, llamas) {
		t.Errorf("--resume <id prefix> did not resume %s: %s", first, e.srv.Requests()[3].Body)
	}

	e.mustRun("sessions", "rename", first, "colour talk")
	e.mustRun("chat", "-Q", "--yolo", "--resume", "colour talk", "-q", "And by title?")
	req = e.request(4)
	if !hasExchange(t, req, fact, noted) || !hasExchange(t, req, "Colour again?", "still teal-4242") {
		t.Errorf("--resume <title> did not resume %s with all its turns: %s", first, e.srv.Requests()[4].Body)
	}
}

// sleeperTurn asks for a terminal command that records its pid, then
// sleeps; the test kills hermes while it runs.
func sleeperTurn() llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_sleep", Name: "terminal",
		Args: args(map[string]any{"command": "echo $$ > sleeper.pid.tmp && mv sleeper.pid.tmp sleeper.pid && exec sleep 30"})}}}
}

// startUntilToolRuns starts hermes with args and returns once the sleeper
// command is running, with its pid. The sleeper is killed at cleanup.
func (e *e2e) startUntilToolRuns(args ...string) (wait func() result, signal func(syscall.Signal)) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	cmd, stdout, stderr := e.command(ctx, nil, args...)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		err := cmd.Wait()
		done <- result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(err)}
	}()
	pidFile := filepath.Join(e.workspace, "sleeper.pid")
	var sleeper int
	for deadline := time.Now().Add(20 * time.Second); sleeper == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case res := <-done:
			e.t.Fatalf("hermes exited before the terminal tool started\n%s", res)
		default:
		}
		if data, err := os.ReadFile(pidFile); err == nil {
			sleeper, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
	}
	if sleeper == 0 {
		cmd.Process.Kill()
		e.t.Fatalf("the terminal tool never started\n%s", <-done)
	}
	sleeper = hostPID(e.t, sleeper, e.workspace)
	e.t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	wait = func() result { return <-done }
	signal = func(sig syscall.Signal) {
		if err := cmd.Process.Signal(sig); err != nil {
			e.t.Fatal(err)
		}
	}
	return wait, signal
}

// checkToolResultsFollowCalls fails unless every assistant tool call in the
// request is answered by a tool message right after it, in order, and every
// tool message answers such a call. It returns the results by call id.
func checkToolResultsFollowCalls(t *testing.T, body map[string]any) map[string]string {
	t.Helper()
	msgs := chatMessages(t, body)
	results := map[string]string{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "tool" {
			t.Errorf("message %d: tool result %s does not follow its call", i, m.ToolCallID)
			continue
		}
		for _, tc := range m.ToolCalls {
			i++
			if i >= len(msgs) || msgs[i].Role != "tool" || msgs[i].ToolCallID != tc.ID {
				t.Errorf("tool call %s is not followed by its result", tc.ID)
				return results
			}
			results[tc.ID] = msgs[i].Text()
		}
	}
	return results
}

// TestKill9DuringToolCallResumesValid: hermes is killed with SIGKILL while a
// terminal command runs; `-c` then resumes with a valid history in which
// the unfinished call has a synthetic cancelled result.
func TestKill9DuringToolCallResumesValid(t *testing.T) {
	e := newE2E(t, sleeperTurn(), llmtest.Turn{Text: "The sleep was interrupted."})
	e.configureModel()
	wait, signal := e.startUntilToolRuns("chat", "-Q", "--yolo", "-q", "run the long job")
	signal(syscall.SIGKILL)
	if res := wait(); res.code != 128+int(syscall.SIGKILL) {
		t.Fatalf("hermes was not killed: %s", res)
	}

	res := e.mustRun("chat", "-Q", "--yolo", "-c", "-q", "Did the job finish?")
	if res.stdout != "The sleep was interrupted.\n" {
		t.Errorf("stdout = %q", res.stdout)
	}
	req := e.request(1)
	results := checkToolResultsFollowCalls(t, req)
	out, ok := results["call_sleep"]
	if !ok {
		t.Fatalf("the resumed history lacks the interrupted call: %s", e.srv.Requests()[1].Body)
	}
	if low := strings.ToLower(out); !strings.Contains(low, "cancelled") && !strings.Contains(low, "interrupted") {
		t.Errorf("the interrupted call's result %q does not say it was cancelled", out)
	}
	if !hasExchange(t, req, "run the long job", "") || lastUserText(t, req) != "Did the job finish?" {
		t.Errorf("the resumed request lacks the old prompt or the new one: %s", e.srv.Requests()[1].Body)
	}
}

// TestSigtermDuringToolCallStoresCancelledResult: SIGTERM during a tool
// call cancels the turn (exit 143 = 128+SIGTERM), stops the command and stores a
// synthetic cancelled result right after the call.
func TestSigtermDuringToolCallStoresCancelledResult(t *testing.T) {
	e := newE2E(t, sleeperTurn())
	e.configureModel()
	wait, signal := e.startUntilToolRuns("chat", "-Q", "--yolo", "-q", "run the long job")
	pid, _ := strconv.Atoi(strings.TrimSpace(testio.ReadFile(t, filepath.Join(e.workspace, "sleeper.pid"))))
	pid = hostPID(t, pid, e.workspace)
	signal(syscall.SIGTERM)
	res := wait()
	if res.code != 143 {
		t.Fatalf("want exit 143 (128+SIGTERM) after SIGTERM\n%s", res)
	}
	if strings.Contains(res.stderr, "goroutine ") {
		t.Errorf("stack trace on SIGTERM\n%s", res)
	}
	// The command's process is gone (killed with its process group).
	gone := false
	for deadline := waitfor.Deadline(t); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil || isZombie(pid) {
			gone = true
			break
		}
	}
	if !gone {
		t.Errorf("the terminal command (pid %d) still runs after hermes was stopped", pid)
	}

	id := e.latestSessionID()
	export := e.mustRun("sessions", "export", id, "--format", "jsonl")
	type line struct {
		Type       string `json:"type"`
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	var msgs []line
	sc := bufio.NewScanner(strings.NewReader(export.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		if l.Type == "message" {
			msgs = append(msgs, l)
		}
	}
	for i, m := range msgs {
		if len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == "call_sleep" {
			if i+1 >= len(msgs) || msgs[i+1].Role != "tool" || msgs[i+1].ToolCallID != "call_sleep" ||
				!strings.Contains(strings.ToLower(msgs[i+1].Content), "cancelled") {
				t.Errorf("the call is not followed by a stored cancelled result:\n%s", export.stdout)
			}
			return
		}
	}
	t.Errorf("the export lacks the interrupted tool call:\n%s", export.stdout)
}

// isZombie reports whether pid has exited but not been reaped (its parent,
// hermes, died first and init has not reaped it yet).
func isZombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}
