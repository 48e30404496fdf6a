package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestExecuteCodeAsksApprovalForACallInside: a dangerous terminal command
// called from an execute_code script is put to the session's person like
// a direct call; denied, the script reads an error result and the
// command never ran.
func TestExecuteCodeAsksApprovalForACallInside(t *testing.T) {
	script := `from hermes_tools import terminal
r = terminal("rm -rf build")
print("rm result:", r)
print("after:", terminal("ls")["output"].split())`
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if c := readConvo(r); c.results == 0 {
			return call("execute_code", codeJSON(script))
		}
		return llmtest.Turn{Text: "done"}
	})
	rt, s, sub, turn := sendCleanWithABuildDir(t, srv)
	asked := 0
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == Final || ev.Kind == Error {
			break
		}
		if ev.Kind == ApprovalRequest {
			asked++
			if ev.Approval.SessionID != s.ID() || !strings.Contains(ev.Approval.Command, "rm -rf build") {
				t.Fatalf("approval %+v", ev.Approval)
			}
			s.Approve(ev.Approval.ID, approval.Deny)
		}
	}
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if asked != 1 {
		t.Fatalf("asked %d times, want once (the rm, not the script)", asked)
	}
	if _, err := os.Stat(filepath.Join(rt.Cwd(), "build")); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	res := readConvo(srv.Requests()[1]).result
	if !strings.Contains(res, `rm result: {'error':`) || !strings.Contains(res, "after: ['build']") || !strings.Contains(res, `"tool_calls_made": 2`) {
		t.Fatalf("the model read: %s", res)
	}
}

// sendCleanWithABuildDir opens a session on srv whose workspace holds a
// build directory, subscribes as its approver (closed when the test ends)
// and sends "clean".
func sendCleanWithABuildDir(t *testing.T, srv *llmtest.Server) (*Runtime, *Session, *Subscription, *Turn) {
	t.Helper()
	rt := newTestRuntime(t, srv, nil)
	if err := os.MkdirAll(filepath.Join(rt.Cwd(), "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{Approver: true})
	t.Cleanup(sub.Close)
	turn, _, _ := s.Send(context.Background(), "clean", SendOptions{})
	return rt, s, sub, turn
}

func codeJSON(script string) string {
	b, _ := json.Marshal(map[string]string{"code": script})
	return string(b)
}

// TestExecuteCodeInASubagentCallsOnlyItsTools: a subagent given only the
// code_execution toolset cannot reach the parent's terminal from a
// script.
func TestExecuteCodeInASubagentCallsOnlyItsTools(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		c := readConvo(r)
		switch {
		case c.child && c.results == 0:
			return call("execute_code", codeJSON("from hermes_tools import terminal\nprint(terminal('touch escaped'))"))
		case c.child:
			return llmtest.Turn{Text: "child saw: " + c.result}
		case c.results == 0:
			return call("delegate_task", `{"goal":"try it","toolsets":["code_execution"]}`)
		}
		return llmtest.Turn{Text: "parent saw: " + c.result}
	})
	rt := newTestRuntime(t, srv, func(o *Options) { o.Yolo = true })
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "go", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rt.Cwd(), "escaped")); !os.IsNotExist(err) {
		t.Fatalf("the script ran the parent's terminal: %v", err)
	}
	if !strings.Contains(res.Text, "cannot import name 'terminal'") {
		t.Fatalf("parent read: %s", res.Text)
	}
}
