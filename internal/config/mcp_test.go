package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/testio"
)

// A Hermes mcp_servers section loads with ${VAR} expanded in env and
// headers, both sampling forms, and no unknown-key warnings.
func TestLoadMCPServers(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), `mcp_servers:
  github:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-github"]
    env:
      GITHUB_PERSONAL_ACCESS_TOKEN: "${GH_TOKEN}"
    tools:
      include: [create_issue, "list_*"]
      exclude: [list_secrets]
    trust: untrusted
    sampling: {enabled: true, model: x}
  remote:
    url: https://mcp.example.com/mcp
    headers:
      Authorization: "Bearer ${REMOTE_KEY}"
    enabled: false
    timeout: 30
    connect_timeout: 5
    sampling: false
    host: true
`)
	l, err := Load(home, LoadOptions{Getenv: mapEnv(map[string]string{"GH_TOKEN": "ghp_abcdefgh12345", "REMOTE_KEY": "rk-0987654321"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || len(l.Unimplemented) != 0 {
		t.Fatalf("warnings %q, unimplemented %q", l.Warnings, l.Unimplemented)
	}
	gh, remote := l.Config.MCPServers["github"], l.Config.MCPServers["remote"]
	if gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_abcdefgh12345" || !gh.Untrusted() || !gh.Sampling.Enabled || !gh.IsEnabled() || !gh.Stdio() {
		t.Fatalf("github: %+v", gh)
	}
	if remote.Headers["Authorization"] != "Bearer rk-0987654321" || remote.IsEnabled() || remote.Timeout != 30 || remote.ConnectTimeout != 5 || remote.Sampling.Enabled || !remote.Host {
		t.Fatalf("remote: %+v", remote)
	}
	for _, s := range []MCPServer{gh, remote} {
		if err := s.Check("x"); err != nil {
			t.Fatal(err)
		}
	}
	if got := append(gh.SecretValues(), remote.SecretValues()...); !slices.Contains(got, "ghp_abcdefgh12345") || !slices.Contains(got, "Bearer rk-0987654321") {
		t.Fatalf("secret values %q", got)
	}
}

func TestMCPToolFilterIncludeWins(t *testing.T) {
	s := MCPServer{Tools: MCPTools{Include: []string{"list_*", "create_issue"}, Exclude: []string{"list_secrets", "create_*"}}}
	for name, want := range map[string]bool{"list_repos": true, "list_secrets": true, "create_issue": true, "create_pr": false, "delete_repo": false} {
		if got := s.ToolAllowed(name); got != want {
			t.Errorf("%s: got %v want %v", name, got, want)
		}
	}
	ex := MCPServer{Tools: MCPTools{Exclude: []string{"delete_*"}}}
	if ex.ToolAllowed("delete_repo") || !ex.ToolAllowed("get_repo") {
		t.Fatal("exclude-only filter")
	}
}

func TestMCPServerCheck(t *testing.T) {
	for name, s := range map[string]MCPServer{
		"neither":   {},
		"both":      {Command: "x", URL: "http://h"},
		"bad url":   {URL: "ftp://h"},
		"bad trust": {Command: "x", Trust: "maybe"},
		"bad glob":  {Command: "x", Tools: MCPTools{Include: []string{"["}}},
	} {
		if err := s.Check("srv"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// `hermes mcp add` writes the entry with secrets moved to .env, keeps the
// rest of config.yaml, and `remove` takes both out again.
func TestSetAndRemoveMCPServer(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "# my settings\nterminal:\n  timeout: 60 # short\n")
	srv := MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"},
		Env: map[string]string{"GITHUB_TOKEN": "ghp_literalsecret123", "LOG_LEVEL": "debug"}, Trust: "untrusted",
		Sampling: MCPSampling{Enabled: true}}
	if err := SetMCPServer(home, "github", srv); err != nil {
		t.Fatal(err)
	}
	if err := SetMCPServer(home, "remote", MCPServer{URL: "https://h.example/mcp", Headers: map[string]string{"Authorization": "Bearer abcdefgh123"}}); err != nil {
		t.Fatal(err)
	}
	cfgText := testio.ReadFile(t, filepath.Join(home, "config.yaml"))
	if strings.Contains(cfgText, "ghp_literalsecret123") || strings.Contains(cfgText, "abcdefgh123") || !strings.Contains(cfgText, "# short") || !strings.Contains(cfgText, "# my settings") {
		t.Fatalf("config.yaml:\n%s", cfgText)
	}
	if env := testio.ReadFile(t, filepath.Join(home, ".env")); !strings.Contains(env, "MCP_GITHUB_GITHUB_TOKEN=") || !strings.Contains(env, "MCP_REMOTE_AUTHORIZATION=") {
		t.Fatalf(".env:\n%s", env)
	}
	l, err := Load(home, LoadOptions{Getenv: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	gh := l.Config.MCPServers["github"]
	if gh.Env["GITHUB_TOKEN"] != "ghp_literalsecret123" || gh.Env["LOG_LEVEL"] != "debug" || !gh.Untrusted() || !gh.Sampling.Enabled || l.Config.Terminal.Timeout != 60 {
		t.Fatalf("loaded %+v", gh)
	}
	if l.Config.MCPServers["remote"].Headers["Authorization"] != "Bearer abcdefgh123" {
		t.Fatalf("remote %+v", l.Config.MCPServers["remote"])
	}
	if ok, err := RemoveMCPServer(home, "github", gh); !ok || err != nil {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if ok, _ := RemoveMCPServer(home, "github", gh); ok {
		t.Fatal("removed twice")
	}
	l, _ = Load(home, LoadOptions{Getenv: mapEnv(nil)})
	if _, ok := l.Config.MCPServers["github"]; ok || len(l.Config.MCPServers) != 1 {
		t.Fatalf("after remove: %+v", l.Config.MCPServers)
	}
	if env := testio.ReadFile(t, filepath.Join(home, ".env")); strings.Contains(env, "ghp_literalsecret123") {
		t.Fatalf(".env keeps the removed secret:\n%s", env)
	}
	if err := SetMCPServer(home, "bad name!", srv); err == nil {
		t.Fatal("bad name accepted")
	}
}

func TestMaskedHidesMCPEnvAndHeaders(t *testing.T) {
	l := &Loaded{Config: Config{MCPServers: map[string]MCPServer{"x": {Command: "c", Env: map[string]string{"PLAIN": "value-is-secret-too"}, Headers: map[string]string{"X-Key": "abc"}}}}}
	m := l.Masked()
	if m.MCPServers["x"].Env["PLAIN"] != MaskSecret("value-is-secret-too") || m.MCPServers["x"].Headers["X-Key"] != "****" {
		t.Fatalf("masked %+v", m.MCPServers)
	}
	if l.Config.MCPServers["x"].Env["PLAIN"] != "value-is-secret-too" {
		t.Fatal("Masked changed the loaded config")
	}
}

// A misspelled key of an mcp_servers entry is an error naming it and the
// fix (it was dropped silently: `turst: untrusted` gave the server full
// trust, `tools.exlude` offered every tool); a Hermes key this build does
// not act on and an unknown key are warnings.
func TestLoadMCPServersUnknownKeys(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), `mcp_servers:
  gh:
    command: npx
    turst: untrusted
    tools:
      exlude: ["*"]
`)
	_, err := Load(home, LoadOptions{Getenv: mapEnv(nil)})
	if err == nil {
		t.Fatal("a misspelled trust key loaded")
	}
	for _, want := range []string{`mcp_servers.gh.turst`, `did you mean "mcp_servers.gh.trust"`, `mcp_servers.gh.tools.exlude`, `"mcp_servers.gh.tools.exclude"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	writeFile(t, filepath.Join(home, "config.yaml"), `mcp_servers:
  remote:
    url: https://mcp.example.com/sse
    transport: sse
    auth: oauth
    colour: blue
`)
	l, err := Load(home, LoadOptions{Getenv: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.Warnings, "\n")
	if len(l.Warnings) != 2 || !strings.Contains(got, "mcp_servers.remote.auth: a Hermes Agent setting this build does not support") ||
		!strings.Contains(got, "mcp_servers.remote.colour: unknown key") {
		t.Fatalf("warnings %q", l.Warnings)
	}
}
