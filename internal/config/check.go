package config

import (
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// Providers returns the model providers this build knows, in menu order:
// the presets (package preset, Hermes's slugs), custom and replay (plays
// back a --record file).
func Providers() []string { return append(preset.Slugs(), "custom", "replay") }

// keyOptional is whether provider runs without a key (a local server).
func keyOptional(provider string) bool {
	p, _ := preset.Lookup(provider)
	return p.KeyOptional
}

// Problems checks values that parse but cannot work: an unknown provider,
// backend, approvals mode, box workspace, local sandbox, API mode or reasoning effort, a custom provider without model.base_url, a
// base URL that is not http(s), a built-in provider whose API key variable
// is unset. Each problem names the key and the fix. It returns nil when
// all is well.
func (l *Loaded) Problems() []string {
	var out []string
	c := l.Config
	where := l.Where
	if p := c.Model.Provider; p != "" && !slices.Contains(Providers(), preset.Canonical(p)) {
		out = append(out, fmt.Sprintf("%s: unknown provider %q; use one of %s (hermes model)", where("model.provider"), p, strings.Join(Providers(), ", ")))
	}
	if c.Model.Provider == "custom" && c.Model.BaseURL == "" {
		out = append(out, "model.base_url: the custom provider needs the endpoint URL, e.g. hermes config set model.base_url http://localhost:11434/v1")
	}
	if u := c.Model.BaseURL; u != "" {
		if err := CheckBaseURL(u); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", where("model.base_url"), err))
		}
	}
	if names := ProviderKeyEnv(c.Model.Provider); len(names) > 0 && !keyOptional(c.Model.Provider) {
		found := false
		for _, n := range names {
			found = found || l.Getenv(n) != ""
		}
		if !found && c.Model.APIKey == "" {
			out = append(out, fmt.Sprintf("%s is not set for provider %s; run: hermes config set %s", names[0], c.Model.Provider, names[0]))
		}
	}
	if b := c.Terminal.Backend; !slices.Contains(TerminalBackends(), b) {
		out = append(out, fmt.Sprintf("%s: backend %q is not supported by this build; use one of %s", where("terminal.backend"), b,
			strings.Join(TerminalBackends(), ", ")))
	}
	if c.Terminal.Backend == "ssh" && (c.Terminal.SSHHost == "" || c.Terminal.SSHUser == "") {
		out = append(out, fmt.Sprintf("%s: backend ssh needs terminal.ssh_host and terminal.ssh_user", where("terminal.backend")))
	}
	if c.Terminal.Backend == "vercel_sandbox" {
		// Seed 004: Vercel Sandbox allocates 2,048 MB per vCPU, so the
		// generic default of 1 vCPU and 5,120 MB fails at sandbox creation.
		if cpu := c.Terminal.ContainerCPU; cpu < 1 || cpu != float64(int(cpu)) || c.Terminal.ContainerMemory != int(cpu)*2048 {
			out = append(out, fmt.Sprintf("%s: terminal.container_cpu %v with terminal.container_memory %d MB is not valid for vercel_sandbox: "+
				"Vercel Sandbox allocates 2,048 MB of memory per vCPU; set a valid pair such as `hermes config set terminal.container_cpu 2` and `hermes config set terminal.container_memory 4096`",
				where("terminal.backend"), c.Terminal.ContainerCPU, c.Terminal.ContainerMemory))
		}
	}
	if m := c.Approvals.Mode; m != "manual" && m != "smart" && m != "off" {
		out = append(out, fmt.Sprintf("%s: mode %q is not one of manual, smart, off", where("approvals.mode"), m))
	}
	for _, key := range []string{"terminal.box_workspace", "terminal.local_sandbox", "model.api_mode", "agent.reasoning_effort"} {
		if v, err := Get(l, key); err == nil {
			if s, ok := v.(string); ok {
				if err := checkValue(key, reflect.ValueOf(s)); err != nil {
					out = append(out, l.located(err).Error())
				}
			}
		}
	}
	for _, key := range []string{"terminal.writable_paths", "terminal.protected_paths"} {
		v := reflect.ValueOf(c.Terminal.WritablePaths)
		if key == "terminal.protected_paths" {
			v = reflect.ValueOf(c.Terminal.ProtectedPaths)
		}
		if err := checkValue(key, v); err != nil {
			out = append(out, l.located(err).Error())
		}
	}
	if err := checkValue("messaging.allowed_targets", reflect.ValueOf(c.Messaging.AllowedTargets)); err != nil {
		out = append(out, l.located(err).Error())
	}
	if err := checkValue("delegation.max_spawn_depth", reflect.ValueOf(c.Delegation.MaxSpawnDepth)); err != nil {
		out = append(out, l.located(err).Error())
	}
	out = append(out, auxProblems(&c, where, l.Getenv)...)
	if err := checkValue("fallback_providers", reflect.ValueOf(c.Fallbacks())); err != nil {
		out = append(out, err.Error())
	}
	for i, f := range c.Fallbacks() {
		if err := f.CheckEnv(i, l.Getenv); err != nil {
			out = append(out, err.Error())
		}
	}
	if c.Terminal.Timeout < 0 || c.Agent.MaxTurns < 0 {
		out = append(out, "terminal.timeout and agent.max_turns must not be negative")
	}
	return out
}

// located gives an *Error of checkValue the config.yaml file and line of
// its key when the value was set there (as Where does); other errors and
// values from elsewhere come back as they are.
func (l *Loaded) located(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Path != "" {
		return err
	}
	if line := l.lines[e.Key]; line > 0 && l.Source(e.Key) == SourceConfig {
		located := *e
		located.Path, located.Line = l.Path, line
		return &located
	}
	return err
}

// CheckBaseURL reports whether u is an absolute http or https URL with a
// host, as a provider base URL must be.
func CheckBaseURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL like http://localhost:11434/v1", u)
	}
	return nil
}
