package mcp

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
	"github.com/hermes-go/hermes/internal/tool"

	"github.com/hermes-go/hermes/internal/waitfor"
)

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
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
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
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	return tl.Run(ctx, tool.Call{ID: "c1", SessionID: "s1", Args: []byte(args)})
}

func TestEverythingStdioListAndCall(t *testing.T) {
	_, reg, _ := startManager(t, map[string]config.MCPServer{"everything": mcptest.Stdio(t, "mcp-server-everything")}, nil)
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

// The filesystem server is started without directories: it asks
// roots/list and gets the session workspace; everything's get-roots-list
// shows the same root.
func TestRootsListAnswered(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(work+"/note.txt", []byte("root file"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, reg, _ := startManager(t, map[string]config.MCPServer{
		"fs":         mcptest.Stdio(t, "mcp-server-filesystem"),
		"everything": mcptest.Stdio(t, "mcp-server-everything"),
	}, func(o *Options) { o.Workspace = work })
	waitFor(t, "the filesystem server to take the root", func() bool {
		res := call(t, reg, "mcp__fs__list_allowed_directories", `{}`)
		return !res.IsError && strings.Contains(res.Content, work)
	})
	if res := call(t, reg, "mcp__fs__read_text_file", `{"path":"`+work+`/note.txt"}`); res.IsError || !strings.Contains(res.Content, "root file") {
		t.Fatalf("read_text_file: %+v", res)
	}
	res := call(t, reg, "mcp__everything__get_roots_list", `{}`)
	if res.IsError || !strings.Contains(res.Content, "file://"+work) {
		t.Fatalf("get-roots-list: %+v", res)
	}
}

// server-everything registers tools after initialization and sends
// notifications/tools/list_changed: the tools are listed again.
func TestToolListChangedRelists(t *testing.T) {
	_, reg, ch := startManager(t, map[string]config.MCPServer{"everything": mcptest.Stdio(t, "mcp-server-everything")}, nil)
	waitFor(t, "a second listing after list_changed", func() bool { return ch.get("everything") >= 2 })
	if _, ok := reg.Get("mcp__everything__get_roots_list"); !ok {
		t.Fatalf("conditional tool missing: %v", reg.Names())
	}
}

func TestIncludeExcludeApplied(t *testing.T) {
	inc := mcptest.Stdio(t, "mcp-server-everything")
	inc.Tools = config.MCPTools{Include: []string{"echo", "get-sum"}, Exclude: []string{"echo"}, Resources: new(bool), Prompts: new(bool)}
	exc := mcptest.Stdio(t, "mcp-server-everything")
	exc.Tools = config.MCPTools{Exclude: []string{"get-*"}}
	_, reg, _ := startManager(t, map[string]config.MCPServer{"inc": inc, "exc": exc}, nil)
	var incNames []string
	for _, n := range reg.Names() {
		if strings.HasPrefix(n, "mcp__inc__") {
			incNames = append(incNames, n)
		}
	}
	if strings.Join(incNames, " ") != "mcp__inc__echo mcp__inc__get_sum" {
		t.Fatalf("include (include wins over exclude, no utilities): %v", incNames)
	}
	if _, ok := reg.Get("mcp__exc__echo"); !ok {
		t.Fatalf("exclude dropped echo: %v", reg.Names())
	}
	for _, n := range []string{"mcp__exc__get_sum", "mcp__exc__get_env"} {
		if _, ok := reg.Get(n); ok {
			t.Fatalf("excluded %s offered", n)
		}
	}
}

// A server that cannot start is told once; the others keep working.
func TestFailingServerDoesNotStopOthers(t *testing.T) {
	var mu sync.Mutex
	var warns []string
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	broken := config.MCPServer{Command: "/nonexistent/mcp-server", ConnectTimeout: 5}
	m, reg, _ := startManager(t, map[string]config.MCPServer{"broken": broken, "everything": mcptest.Stdio(t, "mcp-server-everything")},
		func(o *Options) {
			o.Warn = func(s string) { mu.Lock(); warns = append(warns, s); mu.Unlock() }
			o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		})
	if res := call(t, reg, "mcp__everything__get_sum", `{"a":2,"b":3}`); res.IsError || !strings.Contains(res.Content, "5") {
		t.Fatalf("get-sum: %+v", res)
	}
	// A model that knows the broken server's tools (a resumed session) is
	// told why one is missing, not only that it is unknown.
	if why, ok := reg.Unavailable("mcp__broken__search"); !ok || !strings.Contains(why, "MCP server broken could not be started") || !strings.Contains(why, "/nonexistent/mcp-server") {
		t.Fatalf("Unavailable(mcp__broken__search) = %q, %v", why, ok)
	}
	if _, ok := reg.Unavailable("mcp__everything__nosuch"); ok {
		t.Fatal("a running server's unknown tool reported as unavailable")
	}
	// Two more turns start after the backoff: two more failed starts,
	// still one line on stderr.
	for i := 0; i < 2; i++ {
		mu.Lock()
		now = now.Add(time.Hour)
		mu.Unlock()
		m.Revive()
		waitFor(t, "the restart attempt", func() bool {
			s := m.servers[0]
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.failures == i+2 && s.connecting == nil
		})
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, w := range warns {
		if strings.Contains(w, "broken") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("broken server told %d times: %q", n, warns)
	}
	st := m.Status()
	if len(st) != 2 || st[0].Name != "broken" || st[0].Up || st[0].Err == "" || !st[1].Up {
		t.Fatalf("status %+v", st)
	}
}

// A server killed mid-session is told once and restarted by the next call.
func TestKilledServerRecovers(t *testing.T) {
	pidFile := t.TempDir() + "/pid"
	mem := config.MCPServer{Command: "/bin/sh", Args: []string{"-c", `echo $$ > "$0"; exec "$1"`, pidFile, mcptest.Bin(t, "mcp-server-memory")},
		Env: map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}, ConnectTimeout: 30, Timeout: 30}
	var mu sync.Mutex
	var warns []string
	m, reg, _ := startManager(t, map[string]config.MCPServer{"memory": mem}, func(o *Options) {
		o.Warn = func(s string) { mu.Lock(); warns = append(warns, s); mu.Unlock() }
	})
	create := `{"entities":[{"name":"hermes","entityType":"agent","observations":["survives restarts"]}]}`
	if res := call(t, reg, "mcp__memory__create_entities", create); res.IsError {
		t.Fatalf("create_entities: %+v", res)
	}
	for round := 1; round <= 2; round++ {
		kill(t, pidFile)
		waitFor(t, "the server to be seen down", func() bool { return !m.Status()[0].Up })
		res := call(t, reg, "mcp__memory__read_graph", `{}`)
		if res.IsError || !strings.Contains(res.Content, "survives restarts") || !strings.Contains(res.Content, "was unavailable") {
			t.Fatalf("round %d: read_graph after kill: %+v", round, res)
		}
		if res := call(t, reg, "mcp__memory__read_graph", `{}`); strings.Contains(res.Content, "was unavailable") {
			t.Fatalf("round %d: outage told twice to the model", round)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	stopped := 0
	for _, w := range warns {
		if strings.Contains(w, "stopped") {
			stopped++
		}
	}
	if stopped != 2 {
		t.Fatalf("want one stderr line per outage, got %q", warns)
	}
}

func kill(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := waitfor.Deadline(t)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A server that fails to start offers the tools of its last listing; a
// call tells the model why it is unavailable, and retries the start once
// the backoff has passed.
func TestFailedStartOffersCachedToolsAndRetriesWithBackoff(t *testing.T) {
	cache, flag := t.TempDir(), t.TempDir()+"/fail"
	mem := config.MCPServer{Command: "/bin/sh", Args: []string{"-c", `test -f "$0" && { echo "startup failed" >&2; exit 3; }; exec "$1"`, flag, mcptest.Bin(t, "mcp-server-memory")},
		Env: map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}, ConnectTimeout: 30, Timeout: 30}
	first, _, _ := startManager(t, map[string]config.MCPServer{"memory": mem}, func(o *Options) { o.CacheDir = cache })
	first.Close()

	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var warns []string
	m, reg, _ := startManager(t, map[string]config.MCPServer{"memory": mem}, func(o *Options) {
		o.CacheDir = cache
		o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		o.Warn = func(s string) { mu.Lock(); warns = append(warns, s); mu.Unlock() }
	})
	res := call(t, reg, "mcp__memory__read_graph", `{}`)
	if !res.IsError || !strings.Contains(res.Content, "unavailable") || !strings.Contains(res.Content, "retries it in 1s") {
		t.Fatalf("call during the backoff: %+v", res)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	res = call(t, reg, "mcp__memory__read_graph", `{}`)
	if !res.IsError || !strings.Contains(res.Content, "startup failed") || !strings.Contains(res.Content, "retries it in 2s") {
		t.Fatalf("retry while still failing (its stderr shown, backoff doubled): %+v", res)
	}
	os.Remove(flag)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	res = call(t, reg, "mcp__memory__read_graph", `{}`)
	if res.IsError || !strings.Contains(res.Content, "was unavailable") || !strings.Contains(res.Content, "entities") {
		t.Fatalf("after the server recovered: %+v", res)
	}
	if !m.Status()[0].Up {
		t.Fatal("not up after recovery")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warns) != 1 || !strings.Contains(warns[0], "failed to start") {
		t.Fatalf("want the outage told once on stderr: %q", warns)
	}
}
