// Package mcptest finds the reference MCP servers (@modelcontextprotocol
// server-everything, server-filesystem, server-memory) that .ci/run
// installs with `npm ci` in internal/mcp/testdata/servers, for tests in
// any package.
package mcptest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

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

// EverythingHTTP starts server-everything in mode "streamableHttp" or
// "sse" on a free loopback port and returns its endpoint
// (http://127.0.0.1:PORT/mcp or /sse); the server is killed when the test
// ends.
func EverythingHTTP(t testing.TB, mode string) string {
	t.Helper()
	url, _ := EverythingHTTPOn(t, mode, FreePort(t))
	return url
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// EverythingHTTPOn is EverythingHTTP on port; kill stops the server (it
// is also stopped when the test ends).
func EverythingHTTPOn(t testing.TB, mode string, port int) (url string, kill func()) {
	t.Helper()
	bin := Bin(t, "mcp-server-everything")
	cmd := exec.Command(bin, mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen on %s: %v", mode, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	path := "/mcp"
	if mode == "sse" {
		path = "/sse"
	}
	return "http://" + addr + path, kill
}
