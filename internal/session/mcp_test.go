package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
	"github.com/hermes-go/hermes/internal/store"
)

// toolResults are the tool messages of a chat request, in order.
func toolResults(r llmtest.Request) []string {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	var out []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			out = append(out, m.Text())
		}
	}
	return out
}

// scripted answers the first request with calls, then with the tool
// results joined.
func scripted(calls ...llmtest.Call) func(llmtest.Request) llmtest.Turn {
	return func(r llmtest.Request) llmtest.Turn {
		if lastRole(r) == "tool" {
			return llmtest.Turn{Text: "results:\n" + strings.Join(toolResults(r), "\n---\n")}
		}
		return llmtest.Turn{ToolCalls: calls}
	}
}

// The model calls tools of three reference servers through the agent
// loop; the servers got the workspace as their root.
func TestMCPToolsThroughAgentLoop(t *testing.T) {
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")
	mem := mcptest.Stdio(t, "mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": memFile}
	servers := map[string]config.MCPServer{
		"memory": mem, "everything": mcptest.Stdio(t, "mcp-server-everything"), "files": mcptest.Stdio(t, "mcp-server-filesystem"),
	}
	srv := llmtest.NewServer(t)
	listDirs := llmtest.Call{Name: "mcp__files__list_allowed_directories", Args: `{}`}
	first := scripted(
		llmtest.Call{Name: "mcp__memory__create_entities", Args: `{"entities":[{"name":"hermes","entityType":"agent","observations":["made by the agent loop"]}]}`},
		llmtest.Call{Name: "mcp__everything__get_sum", Args: `{"a":20,"b":22}`},
		listDirs,
	)
	// The filesystem server asks for the roots after initialisation, on
	// its own time: until its answer is processed it lists no directory.
	// The model asks again (at most 20 times) until the workspace shows,
	// so the test waits for that event, not for a clock.
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.MCPServers = servers
		o.Environ = func() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} }
	})
	var asked atomic.Int32
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if res := toolResults(r); lastRole(r) == "tool" && asked.Load() < 20 &&
			strings.HasPrefix(res[len(res)-1], "Allowed directories:") && !strings.Contains(res[len(res)-1], rt.cwd) {
			asked.Add(1)
			return llmtest.Turn{ToolCalls: []llmtest.Call{listDirs}}
		}
		return first(r)
	})
	s, err := rt.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "use the servers", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"42", rt.cwd, "made by the agent loop"} {
		if !strings.Contains(res.Text, want) {
			t.Fatalf("answer lacks %q:\n%s", want, res.Text)
		}
	}
	if b, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(b), "made by the agent loop") {
		t.Fatalf("memory file: %q %v", b, err)
	}
	// The tool list the model got names every server's tools.
	reqs := srv.Requests()
	var body struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(reqs[0].Body, &body)
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Function.Name)
	}
	for _, want := range []string{"mcp__memory__read_graph", "mcp__everything__echo", "mcp__files__read_text_file", "terminal"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Fatalf("model was not offered %s: %v", want, names)
		}
	}
	// Closing the session stops its servers and removes their tools.
	tools := s.Tools()
	s.Close()
	for _, n := range tools.Names() {
		if strings.HasPrefix(n, "mcp__") {
			t.Fatalf("%s still registered after close", n)
		}
	}
}

// A secret in a server's env reaches the server, but never the model,
// state.db or the logs; a session-level server's secret neither.
func TestMCPEnvSecretNeverStored(t *testing.T) {
	const secretValue = "sk-mcp-0123456789abcdef"
	const sessionSecret = "tok-session-9876543210"
	ev := mcptest.Stdio(t, "mcp-server-everything")
	ev.Env = map[string]string{"WIDGET_API_KEY": secretValue}
	broken := config.MCPServer{Command: "/nonexistent/" + sessionSecret, Env: map[string]string{"X_TOKEN": sessionSecret}}
	srv := llmtest.NewServer(t)
	srv.SetResponder(scripted(llmtest.Call{Name: "mcp__everything__get_env", Args: `{}`}))
	var mu sync.Mutex
	var logs []string
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.MCPServers = map[string]config.MCPServer{"everything": ev}
		o.Environ = func() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} }
		o.Warn = func(s string) { mu.Lock(); logs = append(logs, s); mu.Unlock() }
	})
	s, err := rt.Open(context.Background(), OpenOptions{MCPServers: map[string]config.MCPServer{"broken": broken}})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "show env", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "WIDGET_API_KEY") || !strings.Contains(res.Text, Redacted) {
		t.Fatalf("get-env result should show the variable redacted:\n%s", res.Text)
	}
	for _, req := range srv.Requests() {
		if strings.Contains(string(req.Body), secretValue) {
			t.Fatal("the secret reached the model")
		}
	}
	if strings.Contains(res.Text, "OPENAI") || strings.Contains(res.Text, "HERMES_HOME") {
		t.Fatalf("the server inherited hermes' environment:\n%s", res.Text)
	}
	s.Close()
	rt.Close()
	for _, name := range []string{store.FileName, store.FileName + "-wal"} {
		b, _ := os.ReadFile(filepath.Join(rt.opts.Home, name))
		if strings.Contains(string(b), secretValue) {
			t.Fatalf("the secret is in %s", name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(logs, "\n")
	if !strings.Contains(joined, "broken") || strings.Contains(joined, sessionSecret) || strings.Contains(joined, secretValue) {
		t.Fatalf("logs: %q", logs)
	}
}
