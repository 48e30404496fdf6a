package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `hermes config set` checks Vercel Sandbox's memory rule as `config
// check` does (a new user saved 5000 and learned only at sandbox
// creation): a size that can never work is refused and nothing saved;
// seed 004's order of commands gets notes naming the next one, then a
// clean `config check`.
func TestConfigSetChecksVercelSizes(t *testing.T) {
	ta := newTestApp(t, map[string]string{"VERCEL_OIDC_TOKEN": "x"}, "", false)
	for _, c := range []struct {
		args []string
		code int
		out  string // on stderr
	}{
		{[]string{"terminal.backend", "vercel_sandbox"}, 0, "hermes config set terminal.container_memory 2048"},
		{[]string{"terminal.container_cpu", "2"}, 0, "hermes config set terminal.container_memory 4096"},
		{[]string{"terminal.container_memory", "5000"}, 1, "2,048 MB of memory per vCPU"},
		{[]string{"terminal.container_cpu", "1.5"}, 1, "whole number of vCPUs"},
		{[]string{"terminal.container_memory", "4096"}, 0, ""},
		{[]string{"terminal.container_memory", "8192"}, 0, "hermes config set terminal.container_cpu 4"},
		{[]string{"terminal.container_cpu", "4"}, 0, ""},
	} {
		code := ta.run(append([]string{"config", "set"}, c.args...)...)
		if code != c.code || c.out == "" && ta.stderr.Len() > 0 || !strings.Contains(ta.stderr.String(), c.out) {
			t.Errorf("config set %v: %d, stderr %q; want %d and %q", c.args, code, ta.stderr, c.code, c.out)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(ta.home, "config.yaml"))
	if strings.Contains(string(cfg), "5000") || strings.Contains(string(cfg), "1.5") {
		t.Errorf("a refused value was saved:\n%s", cfg)
	}
	if code := ta.run("config", "check"); code != 0 {
		t.Errorf("config check after the seed's commands: %d %s %s", code, ta.stdout, ta.stderr)
	}
	// Other backends take any size.
	other := newTestApp(t, nil, "", false)
	if code := other.run("config", "set", "terminal.container_memory", "5000"); code != 0 || other.stderr.Len() > 0 {
		t.Errorf("box backend, memory 5000: %d %s", code, other.stderr)
	}
}

// `hermes config unset SECTION` removes the whole section, and the .env
// variables of its secrets (it said "is a section; set one of its keys").
func TestConfigUnsetSection(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	for _, kv := range [][2]string{{"terminal.backend", "docker"}, {"terminal.timeout", "300"}, {"model.api_key", "sk-section-secret-1234"}, {"agent.max_turns", "7"}} {
		if code := ta.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("set %s: %s", kv[0], ta.stderr)
		}
	}
	for _, section := range []string{"terminal", "model"} {
		if code := ta.run("config", "unset", section); code != 0 || !strings.Contains(ta.stdout.String(), "Removed section "+section) {
			t.Fatalf("unset %s: %d %s %s", section, code, ta.stdout, ta.stderr)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(ta.home, "config.yaml"))
	env, _ := os.ReadFile(filepath.Join(ta.home, ".env"))
	if strings.Contains(string(cfg), "terminal") || strings.Contains(string(cfg), "model") || !strings.Contains(string(cfg), "max_turns: 7") ||
		strings.Contains(string(env), "sk-section-secret") {
		t.Errorf("after unset terminal and model:\nconfig.yaml:\n%s\n.env:\n%s", cfg, env)
	}
	if code := ta.run("config", "unset", "terminal"); code != 0 || !strings.Contains(ta.stdout.String(), "terminal is not set") {
		t.Errorf("unset a section again: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if code := ta.run("config", "unset", "terminl"); code == 0 {
		t.Errorf("unset of an unknown section succeeded: %s", ta.stdout)
	}
}
