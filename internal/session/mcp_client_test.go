package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
	"github.com/hermes-go/hermes/internal/store"
)

// A session's (an ACP client's) server named like a configured one does
// not replace it: the configured server keeps its tools filter (and
// trust), and the client's connects beside it as <name>-client.
func TestClientMCPServerCannotTakeOverConfiguredName(t *testing.T) {
	configured := mcptest.Stdio(t, "mcp-server-everything")
	configured.Trust = config.MCPTrustUntrusted
	configured.Tools.Exclude = []string{"echo"}
	client := mcptest.Stdio(t, "mcp-server-everything")
	srv := llmtest.NewServer(t)
	var warned []string
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.MCPServers = map[string]config.MCPServer{"everything": configured}
		o.Environ = func() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} }
		o.Warn = func(s string) { warned = append(warned, s) }
	})
	s, err := rt.Open(context.Background(), OpenOptions{MCPServers: map[string]config.MCPServer{"everything": client}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mcpReady(context.Background())
	names := s.Tools().Names()
	if slices.Contains(names, "mcp__everything__echo") {
		t.Errorf("the client's same-named server brought back the excluded tool echo: %v", names)
	}
	if !slices.Contains(names, "mcp__everything__get_sum") || !slices.Contains(names, "mcp__everything_client__echo") {
		t.Errorf("want the configured server's tools and the client's as everything-client: %v", names)
	}
	if !strings.Contains(strings.Join(warned, "\n"), "everything-client") {
		t.Errorf("the rename was not told: %q", warned)
	}
}

// A secret in a session's (an ACP client's) MCP server env is redacted
// from every tool result, not only the server's own: here read_file
// reads it from a workspace file. It reaches neither the model nor
// state.db.
func TestClientMCPServerSecretRedacted(t *testing.T) {
	const secretValue = "tok-client-5f3a9c1e7b2d4068"
	srv := llmtest.NewServer(t)
	srv.SetResponder(scripted(llmtest.Call{Name: "read_file", Args: `{"path":"notes.txt"}`}))
	rt := newTestRuntime(t, srv, nil)
	if err := os.WriteFile(filepath.Join(rt.cwd, "notes.txt"), []byte("token is "+secretValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := config.MCPServer{Command: "/nonexistent/server", Env: map[string]string{"GITHUB_TOKEN": secretValue}}
	s, err := rt.Open(context.Background(), OpenOptions{MCPServers: map[string]config.MCPServer{"gh": client}})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "read notes", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "token is "+Redacted) {
		t.Errorf("read_file result should show the token redacted:\n%s", res.Text)
	}
	for _, req := range srv.Requests() {
		if strings.Contains(string(req.Body), secretValue) {
			t.Fatal("the client's MCP secret reached the model")
		}
	}
	s.Close()
	rt.Close()
	for _, name := range []string{store.FileName, store.FileName + "-wal"} {
		b, _ := os.ReadFile(filepath.Join(rt.opts.Home, name))
		if strings.Contains(string(b), secretValue) {
			t.Fatalf("the client's MCP secret is in %s", name)
		}
	}
}

// A secret the model writes into a tool call (it was told or shown one)
// is redacted in the tool events people see (CLI progress, editors,
// chats) and in the stored session; the call itself still runs with it.
func TestSecretInToolArgumentsRedacted(t *testing.T) {
	const secretValue = "tok-args-8d1e5b3f0c2a4967"
	srv := llmtest.NewServer(t)
	srv.SetResponder(scripted(llmtest.Call{Name: "read_file", Args: `{"path":"` + secretValue + `.txt"}`}))
	rt := newTestRuntime(t, srv, nil)
	if err := os.WriteFile(filepath.Join(rt.cwd, secretValue+".txt"), []byte("found\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt.redact.Add(secretValue)
	s, err := rt.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{})
	defer sub.Close()
	turn, _, _ := s.Send(context.Background(), "read it", SendOptions{})
	starts := 0
	for _, ev := range collect(t, sub, turn.ID) {
		if ev.Kind == ToolStart || ev.Kind == ToolEnd {
			starts++
			if strings.Contains(ev.Args, secretValue) || strings.Contains(ev.Text, secretValue) {
				t.Errorf("%v event shows the secret: %q %q", ev.Kind, ev.Args, ev.Text)
			}
			if ev.Kind == ToolEnd && (ev.IsError || !strings.Contains(ev.Text, "found")) {
				t.Errorf("the call did not run with the real path: %+v", ev)
			}
		}
	}
	if starts == 0 {
		t.Fatal("no tool events")
	}
	s.Close()
	rt.Close()
	for _, name := range []string{store.FileName, store.FileName + "-wal"} {
		b, _ := os.ReadFile(filepath.Join(rt.opts.Home, name))
		if strings.Contains(string(b), secretValue) {
			t.Fatalf("the secret is in %s", name)
		}
	}
}
