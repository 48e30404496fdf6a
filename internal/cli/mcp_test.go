package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/mcp/mcptest"
)

func TestMCPAddListTestRemove(t *testing.T) {
	bin := mcptest.Bin(t, "mcp-server-everything")
	ta := newTestApp(t, map[string]string{"PATH": os.Getenv("PATH")}, "", false)
	ta.Environ = func() []string { return []string{"PATH=" + os.Getenv("PATH")} }
	if rc := ta.run("mcp", "add", "ev", "--env", "WIDGET_TOKEN=tok-0123456789", "--exclude", "get-*", "--", bin, "stdio"); rc != 0 {
		t.Fatalf("add: %d %s", rc, ta.stderr)
	}
	if rc := ta.run("mcp", "add", "remote", "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization=Bearer hdr-0123456789", "--trust", "untrusted"); rc != 0 {
		t.Fatalf("add remote: %d %s", rc, ta.stderr)
	}
	cfg, _ := os.ReadFile(filepath.Join(ta.home, "config.yaml"))
	if strings.Contains(string(cfg), "tok-0123456789") || strings.Contains(string(cfg), "hdr-0123456789") {
		t.Fatalf("secret written to config.yaml:\n%s", cfg)
	}
	if rc := ta.run("mcp", "list"); rc != 0 || !strings.Contains(ta.stdout.String(), "remote  http") || strings.Contains(ta.stdout.String(), "0123456789") {
		t.Fatalf("list: %d\n%s", rc, ta.stdout)
	}
	if rc := ta.run("mcp", "test", "ev"); rc != 0 || !strings.Contains(ta.stdout.String(), "mcp__ev__echo") || strings.Contains(ta.stdout.String(), "mcp__ev__get_sum") {
		t.Fatalf("test ev: %d\n%s%s", rc, ta.stdout, ta.stderr)
	}
	if rc := ta.run("mcp", "test", "remote"); rc != 1 || !strings.Contains(ta.stderr.String(), "MCP server remote failed") || strings.Contains(ta.stderr.String(), "hdr-0123456789") {
		t.Fatalf("test remote: %d\n%s", rc, ta.stderr)
	}
	if rc := ta.run("mcp", "remove", "remote"); rc != 0 {
		t.Fatalf("remove: %d %s", rc, ta.stderr)
	}
	if rc := ta.run("mcp", "remove", "remote"); rc != 1 || !strings.Contains(ta.stderr.String(), `no MCP server "remote"`) {
		t.Fatalf("second remove: %d %s", rc, ta.stderr)
	}
	if env, _ := os.ReadFile(filepath.Join(ta.home, ".env")); strings.Contains(string(env), "hdr-0123456789") || !strings.Contains(string(env), "tok-0123456789") {
		t.Fatalf(".env after remove:\n%s", env)
	}
	if rc := ta.run("mcp", "add", "none"); rc != 1 || !strings.Contains(ta.stderr.String(), "--url") {
		t.Fatalf("add without a target: %d %s", rc, ta.stderr)
	}
	// A command that is not there is saved with a warning naming the key;
	// its test names the entry to fix.
	if rc := ta.run("mcp", "add", "bad", "--", "/nonexistent/mcp-x", "--flag"); rc != 0 || !strings.Contains(ta.stderr.String(), `mcp_servers.bad.command "/nonexistent/mcp-x" is not found`) {
		t.Fatalf("add of a missing command: %d %s", rc, ta.stderr)
	}
	if rc := ta.run("mcp", "test", "bad"); rc != 1 || !strings.Contains(ta.stderr.String(), "mcp_servers.bad: command /nonexistent/mcp-x --flag") {
		t.Fatalf("test of a missing command: %d %s", rc, ta.stderr)
	}
}

// With the box backend, `mcp add` of a stdio server says it runs inside
// the box and how to run it on the host (a host path failed later with
// only "No such file or directory"); --host says nothing of the box.
func TestMCPAddOnBoxBackendSaysWhereTheServerRuns(t *testing.T) {
	ta := newTestApp(t, map[string]string{"PATH": os.Getenv("PATH")}, "", false)
	if rc := ta.run("config", "set", "terminal.backend", "box"); rc != 0 {
		t.Fatalf("config set: %s", ta.stderr)
	}
	if rc := ta.run("mcp", "add", "files", "--", "/home/me/mcp/server.py"); rc != 0 {
		t.Fatalf("mcp add: %s", ta.stderr)
	}
	if out := ta.stdout.String(); !strings.Contains(out, "run inside the box") || !strings.Contains(out, "hermes mcp add files --host") {
		t.Errorf("mcp add on the box backend says:\n%s", out)
	}
	ta.stdout.Reset()
	if rc := ta.run("mcp", "add", "onhost", "--host", "--", "/home/me/mcp/server.py"); rc != 0 {
		t.Fatalf("mcp add --host: %s", ta.stderr)
	}
	if strings.Contains(ta.stdout.String(), "inside the box") {
		t.Errorf("mcp add --host: %s", ta.stdout)
	}
}
