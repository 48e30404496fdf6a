package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setup terminal offers the hosted backends and writes their settings:
// vercel_sandbox's runtime, CPUs and memory, ssh's host, user and port,
// docker's image.
func TestSetupTerminalHostedBackendsRoundTrip(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("setup", "terminal", "--non-interactive", "--backend", "vercel_sandbox", "--vercel-runtime", "python3.13",
		"--cpu", "2", "--memory", "4096"); code != 0 {
		t.Fatalf("vercel: %d %s", code, ta.stderr)
	}
	if !strings.Contains(ta.stdout.String(), "VERCEL_OIDC_TOKEN") {
		t.Errorf("no word on the missing Vercel credentials:\n%s", ta.stdout)
	}
	tc := setupConfig(t, ta).Terminal
	if tc.Backend != "vercel_sandbox" || tc.VercelRuntime != "python3.13" || tc.ContainerCPU != 2 || tc.ContainerMemory != 4096 {
		t.Errorf("terminal after vercel setup: %+v", tc)
	}
	if code := ta.run("setup", "terminal", "--non-interactive", "--backend", "ssh", "--ssh-host", "build.example.com",
		"--ssh-user", "dev", "--ssh-port", "2222"); code != 0 {
		t.Fatalf("ssh: %d %s", code, ta.stderr)
	}
	tc = setupConfig(t, ta).Terminal
	if tc.Backend != "ssh" || tc.SSHHost != "build.example.com" || tc.SSHUser != "dev" || tc.SSHPort != 2222 {
		t.Errorf("terminal after ssh setup: %+v", tc)
	}
	if code := ta.run("setup", "terminal", "--non-interactive", "--backend", "docker", "--docker-image", "python:3.12-slim"); code != 0 {
		t.Fatalf("docker: %d %s", code, ta.stderr)
	}
	if tc = setupConfig(t, ta).Terminal; tc.Backend != "docker" || tc.DockerImage != "python:3.12-slim" {
		t.Errorf("terminal after docker setup: %+v", tc)
	}
}

// Vercel's 2,048 MB per vCPU rule is checked before anything is written,
// naming the flag to change; an ssh backend without a host is refused.
func TestSetupTerminalHostedRejects(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "vercel_sandbox", "--cpu", "2", "--memory", "5000"}, "--memory 5000"},
		{[]string{"--backend", "vercel_sandbox", "--cpu", "1", "--memory", "4096"}, "--cpu 1 with --memory 4096"},
		{[]string{"--backend", "vercel_sandbox", "--cpu", "1.5", "--memory", "2048"}, "whole number of vCPUs"},
		{[]string{"--backend", "vercel_sandbox", "--cpu", "2"}, "takes --memory 4096"}, // the default 5120 MiB does not fit
		{[]string{"--backend", "vercel_sandbox", "--vercel-runtime", "node18", "--cpu", "1", "--memory", "2048"}, "--vercel-runtime"},
		{[]string{"--backend", "ssh"}, "--ssh-host"},
		{[]string{"--backend", "ssh", "--ssh-host", "h"}, "--ssh-user"},
		{[]string{"--backend", "ssh", "--ssh-host", "h", "--ssh-user", "u", "--ssh-key", "/no/such/key"}, "--ssh-key"},
	} {
		ta := newTestApp(t, nil, "", false)
		code := ta.run(append([]string{"setup", "terminal", "--non-interactive"}, c.args...)...)
		if code != 1 || !strings.Contains(ta.stderr.String(), c.want) {
			t.Errorf("%v: want exit 1 with %q, got %d %s", c.args, c.want, code, ta.stderr)
		}
		if _, err := os.Stat(filepath.Join(ta.home, "config.yaml")); err == nil {
			t.Errorf("%v: config.yaml was written", c.args)
		}
	}
}

// The wizard lists the hosted backends, asks vercel_sandbox's runtime,
// memory and CPUs, refuses a size off the 2,048 MB per vCPU rule as it is
// typed, and offers the CPU count that fits the memory as the default.
func TestSetupTerminalWizardVercel(t *testing.T) {
	ta := newTestApp(t, nil, "vercel_sandbox\n\n5000\n4096\n1\n\n", true)
	if code := ta.run("setup", "terminal"); code != 0 {
		t.Fatalf("wizard: %d %s\n%s", code, ta.stderr, ta.stdout)
	}
	out := ta.stdout.String()
	for _, want := range []string{"hosted: ssh, docker, vercel_sandbox, e2b", "--memory 5000: Vercel Sandbox allocates 2,048 MB per vCPU",
		"--cpu 1 with --memory 4096", "[2]:"} {
		if !strings.Contains(out, want) {
			t.Errorf("wizard output lacks %q:\n%s", want, out)
		}
	}
	tc := setupConfig(t, ta).Terminal
	if tc.Backend != "vercel_sandbox" || tc.VercelRuntime != "node24" || tc.ContainerCPU != 2 || tc.ContainerMemory != 4096 {
		t.Errorf("terminal after the wizard: %+v", tc)
	}
	if strings.Contains(out, "Box disk") || strings.Contains(out, "Box image") {
		t.Errorf("the wizard asked box settings for vercel_sandbox:\n%s", out)
	}
}
