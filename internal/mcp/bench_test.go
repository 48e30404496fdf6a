package mcp

import (
	"context"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
	"github.com/hermes-go/hermes/internal/tool"
)

func threeServers(b *testing.B) map[string]config.MCPServer {
	mem := mcptest.Stdio(b, "mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": b.TempDir() + "/memory.jsonl"}
	return map[string]config.MCPServer{
		"everything": mcptest.Stdio(b, "mcp-server-everything"),
		"files":      mcptest.Stdio(b, "mcp-server-filesystem"),
		"memory":     mem,
	}
}

// BenchmarkSessionStartListTools3Servers is a session start (cold): start
// the three reference servers as processes, initialize, list their tools
// (in parallel), then stop them. ns/op is the wait before the first turn.
func BenchmarkSessionStartListTools3Servers(b *testing.B) {
	servers := threeServers(b)
	work := b.TempDir()
	for b.Loop() {
		reg := tool.NewRegistry()
		m := Start(Options{Servers: servers, SessionID: "bench", Workspace: work, Environ: testEnviron, Tools: reg})
		if err := m.Ready(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, st := range m.Status() {
			if !st.Up {
				b.Fatalf("%s down: %s", st.Name, st.Err)
			}
		}
		m.Close()
		b.StartTimer()
	}
}

// BenchmarkRelistTools3Servers lists the tools of three running servers
// again (warm: what notifications/tools/list_changed costs).
func BenchmarkRelistTools3Servers(b *testing.B) {
	servers := threeServers(b)
	reg := tool.NewRegistry()
	m := Start(Options{Servers: servers, SessionID: "bench", Workspace: b.TempDir(), Environ: testEnviron, Tools: reg})
	defer m.Close()
	if err := m.Ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var wg sync.WaitGroup
		for _, s := range m.servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.relist()
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(len(reg.Names())), "tools")
}
