// Package mcptest finds the reference MCP servers (@modelcontextprotocol
// server-everything, server-filesystem, server-memory) that .ci/run
// installs with `npm ci` in internal/mcp/testdata/servers, for tests in
// any package.
package mcptest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

// Bin returns the path of a reference server's executable
// (mcp-server-everything, mcp-server-filesystem, mcp-server-memory),
// skipping the test with the reason when it is not installed.
func Bin(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "testdata", "servers", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference MCP server %s not installed: run `npm ci` in internal/mcp/testdata/servers (.ci/run does)", name)
	}
	return p
}

// Stdio returns a stdio mcp_servers entry running a reference server with
// args, with 30 s connect and call timeouts.
func Stdio(t testing.TB, name string, args ...string) config.MCPServer {
	t.Helper()
	return config.MCPServer{Command: Bin(t, name), Args: args, ConnectTimeout: 30, Timeout: 30}
}
