// Package vercel is the "vercel_sandbox" terminal backend of Hermes Agent
// (Vercel's "Hermes" page, docs/sandbox/ecosystem/hermes): every command
// of a task runs in a Vercel Sandbox microVM, created on the task's first
// command and reused for the task, as the `vercel-sandbox` user in
// /vercel/sandbox. With container_persistent the filesystem is
// snapshotted when the task closes and restored when it resumes (live
// processes never survive, as on Vercel).
//
// Vercel publishes no Go SDK; the REST calls follow @vercel/sandbox 3.5.0
// (Apache-2.0). VERCEL_API_URL points the backend at another server (the
// in-repo fake in tests).
package vercel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"github.com/hermes-go/hermes/internal/backend"
)

// Kind is the terminal.backend name.
const Kind = "vercel_sandbox"

// Runtimes are the values of terminal.vercel_runtime (node24 default).
var runtimes = []string{"node24", "node22", "python3.13"}

// MemoryPerCPU is Vercel Sandbox's fixed allocation: 2,048 MB per vCPU.
const MemoryPerCPU = 2048

// DefaultDisk is terminal.container_disk's generic default (MiB); any
// other value is refused: Vercel sandboxes have no configurable disk.
const DefaultDisk = 51200

// Config is the backend's settings.
type Config struct {
	Runtime    string  // terminal.vercel_runtime; "" = node24
	CPU        float64 // terminal.container_cpu (vCPUs)
	MemoryMB   int     // terminal.container_memory
	DiskMB     int     // terminal.container_disk; must stay DefaultDisk (or 0)
	Persistent bool    // terminal.container_persistent
	Lifetime   time.Duration
	// Credentials: Token is VERCEL_OIDC_TOKEN, else VERCEL_TOKEN (with
	// ProjectID = VERCEL_PROJECT_ID and TeamID = VERCEL_TEAM_ID).
	Token     string
	ProjectID string
	TeamID    string
	BaseURL   string // VERCEL_API_URL; "" = https://vercel.com/api
	// StateDir keeps the snapshot id of each task
	// (HERMES_HOME/sandboxes/vercel_sandbox).
	StateDir   string
	HTTPClient *http.Client
}

// Validate checks the settings the way Hermes's backend does; the errors
// quote seed 004's rule and name the keys to set.
func (c Config) Validate() error {
	if c.Runtime != "" && !slices.Contains(runtimes, c.Runtime) {
		return fmt.Errorf("terminal.vercel_runtime %q is not one of node24, node22, python3.13", c.Runtime)
	}
	cpus := int(c.CPU)
	if c.CPU < 1 || float64(cpus) != c.CPU {
		return fmt.Errorf("terminal.container_cpu %v: Vercel Sandbox needs a whole number of vCPUs (1, 2, 4, 8)", c.CPU)
	}
	if c.MemoryMB != cpus*MemoryPerCPU {
		return fmt.Errorf("terminal.container_memory %d MB does not match terminal.container_cpu %d: Vercel Sandbox allocates 2,048 MB of memory per vCPU, "+
			"so terminal.container_memory must be 2,048 times terminal.container_cpu (for %d vCPU: %d); set a valid pair such as "+
			"`hermes config set terminal.container_cpu 2` and `hermes config set terminal.container_memory 4096`",
			c.MemoryMB, cpus, cpus, cpus*MemoryPerCPU)
	}
	if c.DiskMB != 0 && c.DiskMB != DefaultDisk {
		return fmt.Errorf("terminal.container_disk %d: custom disk sizes are not supported by Vercel Sandbox; remove the key (`hermes config unset terminal.container_disk`)",
			c.DiskMB)
	}
	if c.Token == "" {
		return errors.New("terminal.backend vercel_sandbox needs credentials: VERCEL_OIDC_TOKEN (from `vercel env pull`, development only) " +
			"or VERCEL_TOKEN with VERCEL_PROJECT_ID and VERCEL_TEAM_ID")
	}
	return nil
}

// Backend creates one sandbox per task, lazily.
type Backend struct {
	cfg Config
	api *client

	envs *backend.TaskEnvs[*Environment]
}

// New validates cfg and returns the backend; nothing is created yet.
func New(cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Runtime == "" {
		cfg.Runtime = "node24"
	}
	if cfg.Lifetime == 0 {
		cfg.Lifetime = 30 * time.Minute
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://vercel.com/api"
	}
	if owner, project := oidcClaims(cfg.Token); owner != "" {
		// As @vercel/sandbox does: an OIDC token names its team and project.
		cfg.TeamID, cfg.ProjectID = owner, project
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 0}
	}
	return &Backend{cfg: cfg, envs: backend.NewTaskEnvs[*Environment](Kind),
		api: &client{base: cfg.BaseURL, token: cfg.Token, teamID: cfg.TeamID, http: hc, retries: 3}}, nil
}

// Kind returns "vercel_sandbox".
func (b *Backend) Kind() string { return Kind }

// Isolated is true: a microVM is the boundary.
func (b *Backend) Isolated() bool { return true }

// Open returns the task's environment, creating its sandbox (restored from
// the task's snapshot when persistent) on first use.
func (b *Backend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	return b.envs.Open(taskID, func() (*Environment, error) { return b.create(ctx, taskID) })
}

// create makes the sandbox of a task (from its snapshot when persistent).
func (b *Backend) create(ctx context.Context, taskID string) (*Environment, error) {
	req := createRequest{ProjectID: b.cfg.ProjectID, Runtime: b.cfg.Runtime, Timeout: b.cfg.Lifetime.Milliseconds(),
		Resources: &resources{VCPUs: int(b.cfg.CPU)}}
	if snap := b.savedSnapshot(taskID); snap != "" && b.cfg.Persistent {
		req.Runtime = ""
		req.Source = &snapshotSrc{Type: "snapshot", SnapshotID: snap}
	}
	s, err := b.api.create(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create a Vercel sandbox for task %s: %w", taskID, err)
	}
	e := &Environment{b: b, api: b.api, task: taskID, sid: s.ID, workdir: s.Cwd, extended: time.Now(), procs: map[*process]bool{}}
	if e.workdir == "" {
		e.workdir = "/vercel/sandbox"
	}
	return e, nil
}

// Close closes every environment (snapshotting persistent ones).
func (b *Backend) Close() error {
	return b.envs.Close()
}

// snapshotFile is where a task's snapshot id is kept.
func (b *Backend) snapshotFile(task string) string {
	return filepath.Join(b.cfg.StateDir, url.PathEscape(task)+".json")
}

func (b *Backend) savedSnapshot(task string) string {
	if b.cfg.StateDir == "" {
		return ""
	}
	raw, err := os.ReadFile(b.snapshotFile(task))
	if err != nil {
		return ""
	}
	var st struct {
		SnapshotID string `json:"snapshot_id"`
	}
	_ = json.Unmarshal(raw, &st)
	return st.SnapshotID
}

func (b *Backend) saveSnapshot(task, id string) error {
	if b.cfg.StateDir == "" {
		return nil
	}
	if err := os.MkdirAll(b.cfg.StateDir, 0o700); err != nil {
		return err
	}
	raw, _ := json.Marshal(map[string]string{"snapshot_id": id})
	return renameio.WriteFile(b.snapshotFile(task), raw, 0o600)
}

// oidcClaims reads owner_id and project_id from a JWT's payload without
// verifying it (the API verifies it); "" when token is not such a JWT.
func oidcClaims(token string) (owner, project string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", ""
	}
	var claims struct {
		Owner   string `json:"owner_id"`
		Project string `json:"project_id"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return "", ""
	}
	return claims.Owner, claims.Project
}
