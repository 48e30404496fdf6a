package config

import (
	"path/filepath"
	"slices"
	"testing"
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
