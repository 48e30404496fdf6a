package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
)

// convo is what a scripted model reads of a request: whether it comes
// from a subagent, its first user message and how many tool results it
// has seen.
type convo struct {
	child   bool
	first   string
	results int
	result  string   // the last tool result
	tools   []string // the tools offered
}

func readConvo(r llmtest.Request) convo {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(r.Body, &body)
	var c convo
	for _, m := range body.Messages {
		switch m.Role {
		case "system":
			c.child = strings.HasPrefix(m.Text(), "You are a subagent")
		case "user":
			if c.first == "" {
				c.first = m.Text()
			}
		case "tool":
			c.results++
			c.result = m.Text()
		}
	}
	for _, t := range body.Tools {
		c.tools = append(c.tools, t.Function.Name)
	}
	return c
}

func call(name, args string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: name, Args: args}}}
}

// recordingBackend is the local backend that records the task ids whose
// environment tools opened (the box backend keys its box by them).
type recordingBackend struct {
	backend.Backend
	mu    sync.Mutex
	tasks map[string]bool
}

func (b *recordingBackend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	b.mu.Lock()
	b.tasks[taskID] = true
	b.mu.Unlock()
	return b.Backend.Open(ctx, taskID)
}

// TestDelegateTaskRunsChildrenInTheParentsEnvironment: a batch of two
// tasks runs as two child sessions (parent_session_id set, their own
// fresh conversation without clarify or memory), whose commands run in
// the parent's environment (the same task id: the same box), and whose
// summaries come back to the parent as the tool result.
func TestDelegateTaskRunsChildrenInTheParentsEnvironment(t *testing.T) {
	srv := llmtest.NewServer(t)
	var childTools []string
	var mu sync.Mutex
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		c := readConvo(r)
		switch {
		case c.child && c.results == 0:
			mu.Lock()
			childTools = c.tools
			mu.Unlock()
			name := "a.txt"
			if strings.Contains(c.first, "task B") {
				name = "b.txt"
			}
			return call("terminal", `{"command":"echo made > `+name+`"}`)
		case c.child:
			return llmtest.Turn{Text: "wrote the file for " + strings.Fields(c.first)[2]}
		case c.results == 0:
			return call("delegate_task", `{"tasks":[{"goal":"task A","context":"write a.txt"},{"goal":"task B"}]}`)
		default:
			return llmtest.Turn{Text: "parent saw: " + c.result}
		}
	})
	var rec *recordingBackend
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.NewBackend = func(c *config.Config, cwd string) (backend.Backend, error) {
			b, err := local.New(cwd, nil, o.Environ)
			rec = &recordingBackend{Backend: b, tasks: map[string]bool{}}
			return rec, err
		}
	})
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "split the work", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"status": "completed"`, "wrote the file for A", "wrote the file for B", `"task_index": 1`} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("the parent's tool result lacks %q:\n%s", want, res.Text)
		}
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if b, err := os.ReadFile(filepath.Join(rt.Cwd(), f)); err != nil || strings.TrimSpace(string(b)) != "made" {
			t.Errorf("%s: %q %v", f, b, err)
		}
	}
	if len(rec.tasks) != 1 || !rec.tasks[s.ID()] {
		t.Errorf("tools opened environments %v, want only the parent's %s", rec.tasks, s.ID())
	}
	joined := strings.Join(childTools, ",")
	if !strings.Contains(joined, "terminal") || strings.Contains(joined, "clarify") || strings.Contains(joined, "memory") ||
		strings.Contains(joined, "delegate_task") {
		t.Errorf("child tools: %s", joined)
	}
	listed, err := rt.Store().List(context.Background(), store.ListOptions{Source: "subagent"})
	var children []store.Session
	for _, c := range listed {
		if c.ParentSessionID == s.ID() {
			children = append(children, c)
		}
	}
	if err != nil || len(children) != 2 {
		t.Fatalf("child sessions: %v %v", children, err)
	}
	for _, c := range children {
		msgs, _ := rt.Store().Messages(context.Background(), c.ID)
		if c.Source != "subagent" || len(msgs) != 4 || !strings.HasPrefix(msgs[0].Content, "Goal: task") {
			t.Errorf("child %s (%s): %d messages", c.ID, c.Source, len(msgs))
		}
	}
	if res.APICalls != 6 {
		t.Errorf("the turn reports %d model calls, want 6 (2 own + 2 per child)", res.APICalls)
	}
}

// TestDelegateChildFailureAndLoopAreResults: a child whose model call
// fails comes back as status failed; a child that loops stops at its own
// max turns (delegation.max_iterations) and its calls count against the
// parent's budget, which then ends the parent's turn with a wrap-up.
func TestDelegateChildFailureAndLoopAreResults(t *testing.T) {
	srv := llmtest.NewServer(t)
	var parentCalls [][]string
	var mu sync.Mutex
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		c := readConvo(r)
		switch {
		case c.child && strings.Contains(c.first, "fail"):
			return llmtest.Turn{Status: 400, Error: "bad request from the child"}
		case c.child && len(c.tools) > 0:
			return call("terminal", `{"command":"true"}`) // loops while it has tools
		case c.child:
			return llmtest.Turn{Text: "gave up looping"}
		}
		mu.Lock()
		parentCalls = append(parentCalls, c.tools)
		mu.Unlock()
		if c.results == 0 {
			return call("delegate_task", `{"tasks":[{"goal":"fail at once"},{"goal":"loop forever"}]}`)
		}
		return llmtest.Turn{Text: "parent done: " + c.result}
	})
	rt := newTestRuntime(t, srv, func(o *Options) {
		_ = o.Config.Override("agent.max_turns", "3")
		_ = o.Config.Override("delegation.max_iterations", "2")
	})
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "go", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"status": "failed"`, "bad request from the child", `"status": "max_turns"`, "gave up looping"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("result lacks %q:\n%s", want, res.Text)
		}
	}
	// Parent: 1 call, child: 2 calls with tools = the budget of 3; the
	// parent's second call is the wrap-up, without tools.
	if len(parentCalls) != 2 || len(parentCalls[1]) != 0 || res.Stopped != "max_turns" {
		t.Fatalf("parent calls %d (tools on the last: %v), stopped %q", len(parentCalls), parentCalls[len(parentCalls)-1], res.Stopped)
	}
}

// TestDelegateChildAsksTheParentsPersonForApproval: a child's dangerous
// command is put to the parent session's person (the child inherits the
// parent's approvals, and nothing more).
func TestDelegateChildAsksTheParentsPersonForApproval(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		c := readConvo(r)
		switch {
		case c.child && c.results == 0:
			return call("terminal", `{"command":"rm -rf build"}`)
		case c.child:
			return llmtest.Turn{Text: "child: " + c.result}
		case c.results == 0:
			return call("delegate_task", `{"goal":"clean the build"}`)
		}
		return llmtest.Turn{Text: "done"}
	})
	rt, s, sub, turn := sendCleanWithABuildDir(t, srv)
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == Final || ev.Kind == Error {
			t.Fatalf("ended without asking: %v %q", ev.Kind, ev.Text)
		}
		if ev.Kind == ApprovalRequest {
			if ev.Approval.SessionID != s.ID() || !strings.Contains(ev.Approval.Command, "rm -rf build") {
				t.Fatalf("approval %+v", ev.Approval)
			}
			s.Approve(ev.Approval.ID, approval.Once)
			break
		}
	}
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rt.Cwd(), "build")); !os.IsNotExist(err) {
		t.Fatalf("the approved command did not run: %v", err)
	}
}

// TestDelegateChildIsCancelledWithItsParent: stopping the parent's turn
// while a child waits for its model stops the child and the turn.
func TestDelegateChildIsCancelledWithItsParent(t *testing.T) {
	srv := llmtest.NewServer(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		c := readConvo(r)
		if c.child {
			started <- struct{}{}
			<-release
			return llmtest.Turn{Text: "too late"}
		}
		return call("delegate_task", `{"goal":"take forever"}`)
	})
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "go", SendOptions{})
	<-started
	s.Cancel()
	if _, err := turn.Wait(context.Background()); err == nil {
		t.Fatal("the cancelled turn succeeded")
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model calls after the cancel, want 2 (parent, child)", n)
	}
}

// TestDelegateChildrenUseDelegationModel: delegation.{provider,base_url,
// model,api_key} sends the subagents to their own endpoint with its own
// key (never the parent's); the child session records that model; with
// delegation.model alone, children use that model on the parent's
// endpoint.
func TestDelegateChildrenUseDelegationModel(t *testing.T) {
	parent, child := llmtest.NewServer(t), llmtest.NewServer(t)
	var childAuth, childModel []string
	var mu sync.Mutex
	parent.SetResponder(func(r llmtest.Request) llmtest.Turn {
		c := readConvo(r)
		if c.child {
			return llmtest.Turn{Text: "child on the parent's endpoint, model " + modelOf(r)}
		}
		if c.results == 0 {
			return call("delegate_task", `{"goal":"summarise the logs"}`)
		}
		return llmtest.Turn{Text: "parent done: " + c.result}
	})
	child.SetResponder(func(r llmtest.Request) llmtest.Turn {
		mu.Lock()
		childAuth, childModel = append(childAuth, r.Header.Get("Authorization")), append(childModel, modelOf(r))
		mu.Unlock()
		return llmtest.Turn{Text: "child summary from the cheap model"}
	})
	run := func(overrides ...string) (string, *Runtime) {
		rt := newTestRuntime(t, parent, func(o *Options) {
			_ = o.Config.Override("model.api_key", "parent-secret-key")
			for i := 0; i < len(overrides); i += 2 {
				if err := o.Config.Override(overrides[i], overrides[i+1]); err != nil {
					t.Fatal(err)
				}
			}
		})
		s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		turn, _, _ := s.Send(context.Background(), "go", SendOptions{})
		res, err := turn.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res.Text, rt
	}
	text, rt := run("delegation.provider", "custom", "delegation.base_url", child.URL, "delegation.model", "cheap-model", "delegation.api_key", "child-key")
	if !strings.Contains(text, "child summary from the cheap model") {
		t.Fatalf("parent's answer: %s", text)
	}
	if len(childAuth) != 1 || childAuth[0] != "Bearer child-key" || childModel[0] != "cheap-model" {
		t.Fatalf("child endpoint saw auth %q, model %q", childAuth, childModel)
	}
	kids, err := rt.Store().List(context.Background(), store.ListOptions{Source: "subagent"})
	if err != nil || len(kids) != 1 || kids[0].Model != "cheap-model" {
		t.Fatalf("child session rows %+v (%v)", kids, err)
	}
	text, _ = run("delegation.model", "other-model")
	if !strings.Contains(text, "child on the parent's endpoint, model other-model") || len(childAuth) != 1 {
		t.Fatalf("delegation.model alone: %s (child endpoint calls %d)", text, len(childAuth))
	}
}

// modelOf is the model a chat request names.
func modelOf(r llmtest.Request) string {
	var body struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(r.Body, &body)
	return body.Model
}
