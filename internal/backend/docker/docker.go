// Package docker is the "docker" terminal backend of Hermes Agent
// ("terminal-backends.md"): each task's commands run in a container
// driven through the docker CLI (HERMES_DOCKER_BINARY=podman for Podman),
// started with `run -d … sleep infinity` and used with `exec`, hardened as
// Hermes hardens it: all capabilities dropped but DAC_OVERRIDE, CHOWN and
// FOWNER, no-new-privileges, a pids limit, tmpfs /tmp, /var/tmp and /run,
// --network none when terminal.docker_network is false. Containers carry
// Hermes's labels (hermes-agent=1, hermes-task-id).
//
// Lifecycle: container_persistent false → one fresh container per task,
// removed on close; true → the task's workspace is the host directory
// HERMES_HOME/sandboxes/docker/<task>/workspace mounted at /workspace, and
// the container is stopped on close and started again on the next open
// of the task in the same HERMES_HOME (label hermes-home)
// (Hermes keeps it running across processes; we stop it so that closing a
// task leaves nothing running).
package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/shellexec"
)

// Kind is the terminal.backend name.
const Kind = "docker"

// DefaultImage is Hermes's terminal.docker_image default.
const DefaultImage = "nikolaik/python-nodejs:python3.11-nodejs20"

// Config is the backend's settings.
type Config struct {
	Binary     string  // HERMES_DOCKER_BINARY; "" = docker
	Image      string  // terminal.docker_image; "" = DefaultImage
	CPU        float64 // terminal.container_cpu; 0 = no limit
	MemoryMB   int     // terminal.container_memory; 0 = no limit
	Pids       int     // 0 = 256, as Hermes
	Network    bool    // terminal.docker_network
	Persistent bool    // terminal.container_persistent
	// StateDir holds persistent workspaces (HERMES_HOME/sandboxes/docker).
	StateDir  string
	Env       map[string]string // terminal.docker_env literals
	ExtraArgs []string          // terminal.docker_extra_args, before the image
	// Environ is the environment of the docker CLI (nil = os.Environ).
	Environ []string
}

// Backend runs one container per task.
type Backend struct {
	cfg Config

	envs *backend.TaskEnvs[*env]
}

// env is a task's container and its shell environment.
type env struct {
	*shellexec.Environment
	id string
	b  *Backend
}

// New returns the backend after checking that the CLI answers `version`
// (Hermes: "Docker command is available but 'docker version' failed").
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Binary == "" {
		cfg.Binary = "docker"
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.Pids == 0 {
		cfg.Pids = 256
	}
	b := &Backend{cfg: cfg, envs: backend.NewTaskEnvs[*env](Kind)}
	if _, err := b.cli(ctx, nil, "version", "--format", "{{.Server.Version}}"); err != nil {
		return nil, fmt.Errorf("terminal.backend docker: %s is available but '%s version' failed: %w (start the Docker engine, or set HERMES_DOCKER_BINARY=podman)",
			cfg.Binary, cfg.Binary, err)
	}
	return b, nil
}

// Kind returns "docker".
func (b *Backend) Kind() string { return Kind }

// Isolated is true: the container is the boundary (Hermes skips
// dangerous-command checks for container backends).
func (b *Backend) Isolated() bool { return true }

// cli runs the docker CLI and returns its trimmed stdout; the error
// carries its stderr.
func (b *Backend) cli(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, b.cfg.Binary, args...)
	cmd.Env = b.cfg.Environ
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// Open returns the task's container environment, starting or creating it.
func (b *Backend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	return b.envs.Open(taskID, func() (*env, error) {
		id, err := b.container(ctx, taskID)
		if err != nil {
			return nil, err
		}
		return &env{Environment: shellexec.New(transport{b: b, id: id}, taskID, "/workspace", "container "+shortID(id)), id: id, b: b}, nil
	})
}

// container finds the task's stopped container (persistent mode) and
// starts it, or creates a new one.
func (b *Backend) container(ctx context.Context, task string) (string, error) {
	home := b.homeLabel()
	if b.cfg.Persistent {
		ids, err := b.cli(ctx, nil, "ps", "-a", "--filter", "label=hermes-task-id="+task, "--filter", "label=hermes-home="+home,
			"--format", "{{.ID}}")
		if err == nil && ids != "" {
			id := strings.Fields(ids)[0]
			if _, err := b.cli(ctx, nil, "start", id); err == nil {
				return id, nil
			}
			// A container whose workspace is gone cannot start: replace it.
			_, _ = b.cli(ctx, nil, "rm", "-f", id)
		}
	}
	args := []string{"run", "-d", "--label", "hermes-agent=1", "--label", "hermes-task-id=" + task, "--label", "hermes-home=" + home,
		"--cap-drop", "ALL", "--cap-add", "DAC_OVERRIDE", "--cap-add", "CHOWN", "--cap-add", "FOWNER",
		"--security-opt", "no-new-privileges", "--pids-limit", strconv.Itoa(b.cfg.Pids),
		"--tmpfs", "/tmp:rw,nosuid,size=512m", "--tmpfs", "/var/tmp:rw,noexec,nosuid,size=256m", "--tmpfs", "/run:rw,nosuid,size=64m",
		"-w", "/workspace"}
	if !b.cfg.Persistent {
		args = append(args, "--rm")
	}
	if !b.cfg.Network {
		args = append(args, "--network", "none")
	}
	if b.cfg.CPU > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(b.cfg.CPU, 'f', -1, 64))
	}
	if b.cfg.MemoryMB > 0 {
		args = append(args, "--memory", strconv.Itoa(b.cfg.MemoryMB)+"m")
	}
	if b.cfg.Persistent && b.cfg.StateDir != "" {
		ws := filepath.Join(b.cfg.StateDir, url.PathEscape(task), "workspace")
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return "", err
		}
		args = append(args, "-v", ws+":/workspace")
	}
	for k, v := range b.cfg.Env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, b.cfg.ExtraArgs...)
	args = append(args, b.cfg.Image, "sleep", "infinity")
	id, err := b.cli(ctx, nil, args...)
	if err != nil {
		return "", fmt.Errorf("create a container from %s (terminal.docker_image) for task %s: %w", b.cfg.Image, task, err)
	}
	if _, err := b.cli(ctx, nil, "exec", id, "mkdir", "-p", "/workspace"); err != nil {
		return "", fmt.Errorf("container %s: %w", shortID(id), err)
	}
	return id, nil
}

// Close ends the commands, then removes (or, persistent, stops) the
// container: nothing of the task keeps running.
func (e *env) Close() error {
	_ = e.Environment.Close()
	ctx := context.Background()
	if e.b.cfg.Persistent {
		_, err := e.b.cli(ctx, nil, "stop", "-t", "1", e.id)
		return err
	}
	_, err := e.b.cli(ctx, nil, "rm", "-f", e.id)
	return err
}

// Close closes every task's container.
func (b *Backend) Close() error {
	return b.envs.Close()
}

// homeLabel ties containers to this HERMES_HOME (its state directory), so
// two homes' tasks of the same name never share a container.
func (b *Backend) homeLabel() string {
	sum := sha256.Sum256([]byte(b.cfg.StateDir))
	return hex.EncodeToString(sum[:6])
}

func shortID(id string) string { return id[:min(12, len(id))] }

// transport runs programs with `docker exec`.
type transport struct {
	b  *Backend
	id string
}

type running struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Start runs script with `docker exec [-i] CONTAINER sh -c SCRIPT`.
func (t transport) Start(_ context.Context, script string, stdin io.Reader, pipe bool, stdout, stderr io.Writer) (shellexec.Running, error) {
	args := []string{"exec"}
	if stdin != nil || pipe {
		args = append(args, "-i")
	}
	args = append(args, t.id, "sh", "-c", script)
	cmd := exec.Command(t.b.cfg.Binary, args...)
	cmd.Env = t.b.cfg.Environ
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r := &running{cmd: cmd}
	switch {
	case stdin != nil:
		cmd.Stdin = stdin
	case pipe:
		var err error
		if r.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *running) Stdin() io.WriteCloser { return r.stdin }

// Wait returns docker exec's exit code (the program's; 128+N for a signal).
func (r *running) Wait() (int, string, error) {
	err := r.cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, "", nil
	case errors.As(err, &exit):
		return exit.ExitCode(), "", nil
	}
	return -1, "", err
}

func (r *running) Abandon() {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
	}
}
