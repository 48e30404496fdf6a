package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v4"
)

// NOTE: minimal placeholder implementation written by the lead so other
// packages can compile against the API; the config owner replaces it.

// LoadOptions controls Load.
type LoadOptions struct {
	// IgnoreUserConfig skips config.yaml (--ignore-user-config); .env is still read.
	IgnoreUserConfig bool
	// Getenv looks up the process environment (os.Getenv in production).
	Getenv func(string) string
}

// Loaded is a loaded configuration with defaults applied.
type Loaded struct {
	Config Config
	// Path is the config.yaml path (it may not exist).
	Path string
	// DotEnv holds the variables of HERMES_HOME/.env.
	DotEnv map[string]string
	getenv func(string) string
}

// Getenv returns the process environment value of key, else its .env value.
func (l *Loaded) Getenv(key string) string {
	if l.getenv != nil {
		if v := l.getenv(key); v != "" {
			return v
		}
	}
	return l.DotEnv[key]
}

// Defaults returns the built-in defaults.
func Defaults() Config {
	t := true
	return Config{
		Terminal: TerminalConfig{Backend: "local", Cwd: ".", Timeout: 180, ContainerCPU: 1,
			ContainerMemory: 5120, ContainerDisk: 51200, ContainerPersistent: &t, LifetimeSeconds: 300,
			BoxImage: "host", BoxWorkspace: "bind", BoxPids: 1024},
		Approvals:   ApprovalsConfig{Mode: "manual", Timeout: 300},
		Memory:      MemoryConfig{MemoryEnabled: &t, UserProfileEnabled: &t, MemoryCharLimit: 2200, UserCharLimit: 1375},
		Compression: CompressionConfig{Enabled: &t, Threshold: 0.5, TargetRatio: 0.2, ProtectFirstN: 3, ProtectLastN: 20},
	}
}

// Load reads HERMES_HOME/config.yaml (unless opts.IgnoreUserConfig) and .env.
func Load(home string, opts LoadOptions) (*Loaded, error) {
	l := &Loaded{Config: Defaults(), Path: filepath.Join(home, "config.yaml"), DotEnv: map[string]string{}, getenv: opts.Getenv}
	if !opts.IgnoreUserConfig {
		b, err := os.ReadFile(l.Path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err == nil {
			if err := yaml.Unmarshal(b, &l.Config); err != nil {
				return nil, fmt.Errorf("%s: %v", l.Path, err)
			}
		}
	}
	return l, nil
}

// Set writes one dotted key (e.g. "terminal.backend") to config.yaml, or to
// .env for secrets (names ending in _API_KEY, _TOKEN, ...). value is parsed
// as YAML (so "[a, b]" is a list and "2" a number).
func Set(home, key, value string) error {
	return fmt.Errorf("config.Set not implemented yet")
}
