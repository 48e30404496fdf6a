package mcp

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/tool"
)

// serversDir is where .ci/run installs the reference servers (npm ci in
// testdata/servers).
func serversDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "testdata", "servers", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(dir, "mcp-server-everything")); err != nil {
		t.Skip("reference MCP servers not installed: run `npm ci` in internal/mcp/testdata/servers (.ci/run does)")
	}
	return dir
}

// refServer is a stdio entry for one of the reference servers.
func refServer(t testing.TB, bin string, args ...string) config.MCPServer {
	return config.MCPServer{Command: filepath.Join(serversDir(t), bin), Args: args, ConnectTimeout: 30, Timeout: 30}
}

// testEnviron is a minimal host environment for servers (node on PATH).
func testEnviron() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
}

// changes counts ToolsChanged calls per server.
type changes struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *changes) add(s string) { c.mu.Lock(); c.n[s]++; c.mu.Unlock() }
func (c *changes) get(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[s]
}

func startManager(t *testing.T, servers map[string]config.MCPServer, tune func(*Options)) (*Manager, *tool.Registry, *changes) {
	t.Helper()
	reg := tool.NewRegistry()
	ch := &changes{n: map[string]int{}}
	o := Options{Servers: servers, SessionID: "s1", Workspace: t.TempDir(), Environ: testEnviron, Tools: reg,
		Warn: func(s string) { t.Log(s) }, ToolsChanged: ch.add}
	if tune != nil {
		tune(&o)
	}
	m := Start(o)
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return m, reg, ch
}

func call(t *testing.T, reg *tool.Registry, name, args string) tool.Result {
	t.Helper()
	tl, ok := reg.Get(name)
	if !ok {
		t.Fatalf("tool %s not registered; have %v", name, reg.Names())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return tl.Run(ctx, tool.Call{ID: "c1", SessionID: "s1", Args: []byte(args)})
}

func TestEverythingStdioListAndCall(t *testing.T) {
	_, reg, _ := startManager(t, map[string]config.MCPServer{"everything": refServer(t, "mcp-server-everything")}, nil)
	names := reg.Names()
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get_sum", "mcp__everything__list_resources", "mcp__everything__get_prompt"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s missing from %v", want, names)
		}
	}
	res := call(t, reg, "mcp__everything__echo", `{"message":"hello mcp"}`)
	if res.IsError || !strings.Contains(res.Content, "hello mcp") {
		t.Fatalf("echo: %+v", res)
	}
}
