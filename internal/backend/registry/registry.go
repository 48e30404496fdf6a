// Package registry builds the terminal backend named by config.yaml's
// terminal.backend (local, box, ssh, docker, vercel_sandbox, e2b) from its
// settings. It is the one place that knows every backend package; the
// faces (cli, gateway, doctor) call New and see only backend.Backend.
package registry

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/docker"
	e2bbackend "github.com/hermes-go/hermes/internal/backend/e2b"
	"github.com/hermes-go/hermes/internal/backend/local"
	sshbackend "github.com/hermes-go/hermes/internal/backend/ssh"
	"github.com/hermes-go/hermes/internal/backend/vercel"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
)

// Deps is what the constructors need from the process that runs them.
type Deps struct {
	// Home is HERMES_HOME (state of the box, docker and vercel backends).
	Home string
	// Getenv reads the host environment (HOME, SSH_AUTH_SOCK,
	// terminal.env_passthrough); hosted credentials come from
	// config.Loaded.Getenv, which also reads HERMES_HOME/.env.
	Getenv func(string) string
	// Environ is the full host environment (local and docker backends).
	Environ func() []string
	// Executable is the running hermes binary: the box init falls back to
	// it, and the local backend's PID-1 reaper is it.
	Executable string
	// Stderr gets the local and box backends' warnings.
	Stderr io.Writer
	// Notice shows one line of a hosted backend's notices to the person
	// (e2b); nil drops them.
	Notice func(line string)
}

// constructor builds one kind of backend for cfg with commands starting in
// cwd.
type constructor func(d Deps, cfg *config.Loaded, cwd string) (backend.Backend, error)

// constructors is the table of terminal.backend values and their
// constructors ("" means local).
func constructors() map[string]constructor {
	return map[string]constructor{
		"":              newLocal,
		"local":         newLocal,
		"box":           newBox,
		sshbackend.Kind: newSSH,
		e2bbackend.Kind: newE2B,
		vercel.Kind:     newVercel,
		docker.Kind:     newDocker,
	}
}

// Kinds are the terminal.backend values New accepts, sorted as
// config.TerminalBackends lists them.
func Kinds() []string {
	table := constructors()
	var kinds []string
	for _, k := range config.TerminalBackends() {
		if table[k] != nil {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// New builds the backend that cfg's terminal.backend names, for commands
// starting in cwd. An unknown name is an error naming the config key, the
// values accepted and the fix.
func New(d Deps, cfg *config.Loaded, cwd string) (backend.Backend, error) {
	kind := cfg.Config.Terminal.Backend
	build := constructors()[kind]
	if build == nil {
		return nil, fmt.Errorf("%s: %q is not supported: use one of %s (`hermes config set terminal.backend box`)", cfg.Where("terminal.backend"),
			kind, strings.Join(config.TerminalBackends(), ", "))
	}
	return build(d, cfg, cwd)
}

// newE2B builds the e2b backend: E2B's cloud (E2B_API_KEY) or hermes
// sandbox serve (E2B_API_URL, E2B_SANDBOX_URL); container_persistent pauses
// the sandbox at the end instead of killing it.
func newE2B(d Deps, cfg *config.Loaded, _ string) (backend.Backend, error) {
	c := &cfg.Config
	persistent := c.Terminal.ContainerPersistent == nil || *c.Terminal.ContainerPersistent
	notice := d.Notice
	if notice == nil {
		notice = func(string) {}
	}
	return e2bbackend.New(e2bbackend.FromEnv(e2bbackend.Options{Persistent: persistent, Notice: notice}, cfg.Getenv))
}

// newVercel builds the vercel_sandbox backend: credentials from
// VERCEL_OIDC_TOKEN, else VERCEL_TOKEN + VERCEL_PROJECT_ID +
// VERCEL_TEAM_ID (cfg.Getenv: the environment, then HERMES_HOME/.env),
// snapshot ids kept in HERMES_HOME/sandboxes/vercel_sandbox.
func newVercel(d Deps, cfg *config.Loaded, _ string) (backend.Backend, error) {
	c, getenv := &cfg.Config, cfg.Getenv
	token, project, team := getenv("VERCEL_OIDC_TOKEN"), "", ""
	if token == "" {
		token, project, team = getenv("VERCEL_TOKEN"), getenv("VERCEL_PROJECT_ID"), getenv("VERCEL_TEAM_ID")
	}
	persistent := c.Terminal.ContainerPersistent == nil || *c.Terminal.ContainerPersistent
	return vercel.New(vercel.Config{Runtime: c.Terminal.VercelRuntime, CPU: c.Terminal.ContainerCPU, MemoryMB: c.Terminal.ContainerMemory,
		DiskMB: c.Terminal.ContainerDisk, Persistent: persistent, Lifetime: time.Duration(c.Terminal.LifetimeSeconds) * time.Second,
		Token: token, ProjectID: project, TeamID: team, BaseURL: getenv("VERCEL_API_URL"),
		StateDir: filepath.Join(d.Home, "sandboxes", vercel.Kind)})
}

// newDocker builds the docker backend (HERMES_DOCKER_BINARY picks the CLI;
// persistent workspaces in HERMES_HOME/sandboxes/docker).
func newDocker(d Deps, cfg *config.Loaded, _ string) (backend.Backend, error) {
	t := cfg.Config.Terminal
	return docker.New(context.Background(), docker.Config{Binary: cfg.Getenv("HERMES_DOCKER_BINARY"), Image: t.DockerImage,
		CPU: t.ContainerCPU, MemoryMB: t.ContainerMemory, Network: t.DockerNetwork == nil || *t.DockerNetwork,
		Persistent: t.ContainerPersistent == nil || *t.ContainerPersistent, StateDir: filepath.Join(d.Home, "sandboxes", docker.Kind),
		Env: t.DockerEnv, ExtraArgs: t.DockerExtraArgs, Environ: d.Environ()})
}

// newSSH builds the ssh backend from terminal.ssh_*; commands start in
// terminal.cwd when it is an absolute path, else in the remote home (the
// local directory means nothing on the remote host).
func newSSH(d Deps, cfg *config.Loaded, _ string) (backend.Backend, error) {
	c := &cfg.Config
	wd := ""
	if strings.HasPrefix(c.Terminal.Cwd, "/") {
		wd = c.Terminal.Cwd
	}
	return sshbackend.New(sshbackend.Config{Host: c.Terminal.SSHHost, User: c.Terminal.SSHUser, Port: c.Terminal.SSHPort,
		KeyFile: c.Terminal.SSHKey, Workdir: wd, HomeDir: d.Getenv("HOME"), AgentSocket: d.Getenv("SSH_AUTH_SOCK")})
}

// newLocal builds the local backend under terminal.local_sandbox. An
// unknown mode is an error (never a silent "off"); the hermes process is
// made non-dumpable so that, even unconfined, a command of another user
// id, or without CAP_SYS_PTRACE, cannot read its environment or memory
// through /proc.
func newLocal(d Deps, cfg *config.Loaded, cwd string) (backend.Backend, error) {
	c := &cfg.Config
	mode := c.Terminal.LocalSandbox
	switch mode {
	case "", "workspace-write", "read-only", "off":
	default:
		return nil, fmt.Errorf("terminal.local_sandbox %q is not one of workspace-write, read-only, off; fix it with `hermes config set terminal.local_sandbox workspace-write`", mode)
	}
	home := filepath.Clean(d.Home)
	for _, w := range c.Terminal.WritablePaths {
		p := w
		if rest, ok := strings.CutPrefix(p, "~"); ok && (rest == "" || rest[0] == '/') {
			p = d.Getenv("HOME") + rest
		}
		if p = filepath.Clean(p); p == home || strings.HasPrefix(p, home+"/") {
			return nil, fmt.Errorf("terminal.writable_paths: %q is inside HERMES_HOME (%s), which commands may never write; remove it with `hermes config set terminal.writable_paths [...]`", w, home)
		}
	}
	if err := local.HideProcess(); err != nil {
		fmt.Fprintln(d.Stderr, "hermes: warning:", err)
	}
	return local.NewWithOptions(local.Options{
		Cwd: cwd, Passthrough: c.Terminal.EnvPassthrough, Environ: d.Environ,
		Sandbox: local.Sandbox(mode), WritablePaths: c.Terminal.WritablePaths, HermesHome: d.Home,
		ProtectedPaths: c.Terminal.ProtectedPaths, PIDInit: d.Executable,
		Supervise: true, Warn: d.Stderr,
	})
}

// newBox builds the box backend (terminal.backend: box): one box per
// session, egress through the host proxy with the configured allowlist.
// The manager prestarts a box init so that the box boots while the model
// thinks about its first answer.
func newBox(d Deps, cfg *config.Loaded, cwd string) (backend.Backend, error) {
	return NewBoxManager(d, cfg.Config.Terminal, cwd, true)
}

// NewBoxManager builds the box backend for terminal config t with the
// egress gate of terminal.box_network, for workspace cwd ("" = t.Cwd);
// prestart boots a spare box init at once. Each of with adjusts the
// Manager's options before it is made.
func NewBoxManager(d Deps, t config.TerminalConfig, cwd string, prestart bool, with ...func(*box.Options)) (*box.Manager, error) {
	if cwd != "" {
		t.Cwd = cwd
	}
	gate, err := egress.New(egress.Options{Home: d.Home, Allow: t.BoxNetwork.Allow, Deny: t.BoxNetwork.Deny, CAFile: t.BoxNetwork.CAFile,
		BoxMemoryMiB: t.ContainerMemory})
	if err != nil {
		return nil, fmt.Errorf("terminal.box_network: %w", err)
	}
	opts := box.Options{Terminal: t, Home: d.Home, Executable: d.Executable, NewEgress: gate.NewBox,
		UserHome: d.Getenv("HOME"), Prestart: prestart, LookupEnv: d.lookupEnv, Warn: d.Stderr}
	for _, f := range with {
		f(&opts)
	}
	return box.NewManager(opts)
}

// lookupEnv reads the host environment through Getenv (an empty value
// counts as unset), for terminal.env_passthrough.
func (d Deps) lookupEnv(name string) (string, bool) {
	v := d.Getenv(name)
	return v, v != ""
}
