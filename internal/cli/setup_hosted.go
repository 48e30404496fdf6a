package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes-go/hermes/internal/backend/vercel"
	"github.com/hermes-go/hermes/internal/config"
)

// backendChoices describes the terminal.backend values for the wizard's
// prompt and the command's help.
const backendChoices = "local runs commands on this machine, box in hermes's sandbox; " +
	"hosted: ssh, docker, vercel_sandbox, e2b"

// vercelRuntimes are the values of terminal.vercel_runtime.
var vercelRuntimes = []string{"node24", "node22", "python3.13"}

// hostedSettings are the settings of the ssh and docker backends (the
// vercel_sandbox ones sit with cpu and memory; e2b has none in
// config.yaml: its keys live in .env).
func hostedSettings() []setupSetting {
	ssh := []string{"ssh"}
	vc := []string{vercel.Kind}
	return []setupSetting{
		{flag: "docker-image", key: "terminal.docker_image", label: "Docker image", backends: []string{"docker"},
			current: func(t config.TerminalConfig) string {
				return cmpOrString(t.DockerImage, "nikolaik/python-nodejs:python3.11-nodejs20")
			}, check: checkNoSpaces("--docker-image", "an image reference such as python:3.12-slim")},
		{flag: "ssh-host", key: "terminal.ssh_host", label: "SSH host (name or address)", backends: ssh,
			current: func(t config.TerminalConfig) string { return t.SSHHost }, check: checkNoSpaces("--ssh-host", "a host name or address")},
		{flag: "ssh-user", key: "terminal.ssh_user", label: "SSH user", backends: ssh,
			current: func(t config.TerminalConfig) string { return t.SSHUser }, check: checkNoSpaces("--ssh-user", "a user name")},
		{flag: "ssh-port", key: "terminal.ssh_port", label: "SSH port", backends: ssh,
			current: func(t config.TerminalConfig) string { return strconv.Itoa(cmpOrInt(t.SSHPort, 22)) }, check: checkSSHPort},
		{flag: "ssh-key", key: "terminal.ssh_key", label: "SSH private key file (empty: ssh-agent, then ~/.ssh/id_*)", backends: ssh,
			current: func(t config.TerminalConfig) string { return t.SSHKey }, check: checkSSHKey},
		{flag: "vercel-project-id", key: "VERCEL_PROJECT_ID", label: "Vercel project id for VERCEL_TOKEN auth (Enter keeps; empty with OIDC)", backends: vc,
			current: func(config.TerminalConfig) string { return "" }, check: checkVercelID("--vercel-project-id")},
		{flag: "vercel-team-id", key: "VERCEL_TEAM_ID", label: "Vercel team id for VERCEL_TOKEN auth (Enter keeps; empty with OIDC)", backends: vc,
			current: func(config.TerminalConfig) string { return "" }, check: checkVercelID("--vercel-team-id")},
	}
}

func cmpOrString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func cmpOrInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func checkNoSpaces(flag, what string) func(string, string) (string, error) {
	return func(_, v string) (string, error) {
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v, " \t") {
			return "", fmt.Errorf("%s %q: give %s", flag, v, what)
		}
		return v, nil
	}
}

func checkVercelRuntime(_, v string) (string, error) {
	v = strings.TrimSpace(v)
	if !slices.Contains(vercelRuntimes, v) {
		return "", fmt.Errorf("--vercel-runtime %q: use one of %s", v, strings.Join(vercelRuntimes, ", "))
	}
	return v, nil
}

func checkSSHPort(_, v string) (string, error) {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("--ssh-port %q: give a port number (1-65535)", v)
	}
	return strings.TrimSpace(v), nil
}

// checkSSHKey accepts "" (ssh-agent, then ~/.ssh/id_*) or a readable
// file, saved as given (~/ is expanded by the backend).
func checkSSHKey(_, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return `""`, nil
	}
	p := v
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, rest)
		}
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("--ssh-key %q: no such file; give a private key file such as ~/.ssh/id_ed25519, or nothing to use ssh-agent", v)
	}
	return v, nil
}

// wizardDefault is the answer Enter takes for s: the current value, except
// that vercel_sandbox's CPU count follows the memory just chosen (2,048 MB
// per vCPU).
func wizardDefault(backend string, s setupSetting, vals map[string]string) string {
	if backend == vercel.Kind && s.flag == "cpu" {
		if mem, err := strconv.Atoi(vals["memory"]); err == nil && mem >= vercel.MemoryPerCPU && mem%vercel.MemoryPerCPU == 0 {
			return strconv.Itoa(mem / vercel.MemoryPerCPU)
		}
	}
	if backend == vercel.Kind && s.flag == "memory" {
		if mem, err := strconv.Atoi(vals["memory"]); err != nil || mem%vercel.MemoryPerCPU != 0 {
			return strconv.Itoa(vercel.MemoryPerCPU) // the generic default (5120) is not a Vercel size
		}
	}
	return vals[s.flag]
}

// checkPair checks a value against the backend's rules that tie settings
// together, as the value is given or typed: Vercel Sandbox allocates
// 2,048 MB of memory per whole vCPU.
func checkPair(backend, flag, v string, vals map[string]string) error {
	if backend != vercel.Kind {
		return nil
	}
	switch flag {
	case "memory":
		if mem, _ := strconv.Atoi(v); mem%vercel.MemoryPerCPU != 0 {
			return fmt.Errorf("--memory %s: Vercel Sandbox allocates 2,048 MB per vCPU; use 2048, 4096, 8192 or 16384 (2,048 × --cpu)", v)
		}
	case "cpu":
		cpu, _ := strconv.ParseFloat(v, 64)
		if cpu < 1 || cpu != float64(int(cpu)) {
			return fmt.Errorf("--cpu %s: Vercel Sandbox needs a whole number of vCPUs (1, 2, 4, 8)", v)
		}
		if mem, err := strconv.Atoi(vals["memory"]); err == nil && mem != int(cpu)*vercel.MemoryPerCPU {
			return fmt.Errorf("--cpu %s with --memory %d: Vercel Sandbox allocates 2,048 MB per vCPU, so %s vCPU takes --memory %d",
				v, mem, v, int(cpu)*vercel.MemoryPerCPU)
		}
	}
	return nil
}

// checkBackendSettings checks the settings the backend will run with
// (given, asked or already in config.yaml) before anything is written.
func checkBackendSettings(backend string, vals map[string]string) error {
	switch backend {
	case vercel.Kind:
		if err := checkPair(backend, "memory", vals["memory"], vals); err != nil {
			return err
		}
		return checkPair(backend, "cpu", vals["cpu"], vals)
	case "ssh":
		if vals["ssh-host"] == "" || vals["ssh-user"] == "" {
			return fmt.Errorf("--ssh-host and --ssh-user: the ssh backend needs both (hermes setup terminal --backend ssh --ssh-host build.example.com --ssh-user dev)")
		}
	}
	return nil
}

// credentialNotice tells, after setup, which .env keys a hosted backend
// still needs (getenv: the environment, then .env).
func (a *App) credentialNotice(backend string, getenv func(string) string) {
	var msg string
	switch backend {
	case vercel.Kind:
		if getenv("VERCEL_OIDC_TOKEN") == "" && getenv("VERCEL_TOKEN") == "" {
			msg = "vercel_sandbox needs credentials: `hermes config set VERCEL_OIDC_TOKEN ...` (from `vercel env pull`), " +
				"or VERCEL_TOKEN with VERCEL_PROJECT_ID and VERCEL_TEAM_ID"
		}
	case "e2b":
		if getenv("E2B_API_KEY") == "" {
			msg = "e2b needs E2B_API_KEY (`hermes config set E2B_API_KEY ...`); for a `hermes sandbox serve`, also E2B_API_URL and E2B_SANDBOX_URL"
		}
	}
	if msg != "" {
		fmt.Fprintf(a.Stdout, "Note: %s (saved in %s).\n", msg, filepath.Join(a.Home(), ".env"))
	}
}

// vercelIDSetting is whether flag is one of the Vercel project/team ids.
func vercelIDSetting(flag string) bool {
	return flag == "vercel-project-id" || flag == "vercel-team-id"
}

// vercelLinkDefaults fills the Vercel id defaults: VERCEL_PROJECT_ID and
// VERCEL_TEAM_ID when set, else the nearest .vercel/project.json (written
// by `vercel link`) at or above the working directory, as seed 004 says.
// A broken project.json is reported and ignored.
func (a *App) vercelLinkDefaults(getenv func(string) string, vals map[string]string) {
	vals["vercel-project-id"], vals["vercel-team-id"] = getenv("VERCEL_PROJECT_ID"), getenv("VERCEL_TEAM_ID")
	if vals["vercel-project-id"] != "" && vals["vercel-team-id"] != "" {
		return
	}
	wd, err := os.Getwd()
	if err != nil {
		return
	}
	link, found, err := vercel.FindProjectLink(wd)
	if err != nil {
		fmt.Fprintf(a.Stderr, "warning: %v\n", err)
		return
	}
	if !found {
		return
	}
	vals["vercel-project-id"] = cmpOrString(vals["vercel-project-id"], link.ProjectID)
	vals["vercel-team-id"] = cmpOrString(vals["vercel-team-id"], link.OrgID)
}

// checkVercelID accepts a Vercel id (prj_…, team_…) or nothing.
func checkVercelID(flag string) func(string, string) (string, error) {
	return func(_, v string) (string, error) {
		v = strings.TrimSpace(v)
		if v != "" && (len(v) > 128 || strings.ContainsFunc(v, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		})) {
			return "", fmt.Errorf("%s %q: give a Vercel id such as prj_abc123 or team_abc123", flag, v)
		}
		return v, nil
	}
}
