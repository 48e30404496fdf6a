package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/sandboxserver"
)

// fleetOptions are hermes sandbox serve's fleet flags: a shared
// PostgreSQL catalog makes this server one node of a fleet.
type fleetOptions struct {
	catalog string // PostgreSQL URL ("" = HERMES_DATABASE_URL, else SQLite in HERMES_HOME)
	schema  string
	node    string
	// advertised addresses of this node's listeners ("" = the listen address)
	advertiseAPI, advertiseEnvd string
	tokenFile                   string
	cpu                         int
	memoryMB                    int64
	heartbeat                   time.Duration
}

func (o *fleetOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.catalog, "catalog", "", "sandbox catalog: a postgres:// URL shared by a fleet of nodes (default: $HERMES_DATABASE_URL, else HERMES_HOME/sandboxes.db)")
	f.StringVar(&o.schema, "catalog-schema", sandboxcatalog.DefaultSchema, "PostgreSQL schema of the sandbox catalog")
	f.StringVar(&o.node, "node", "", "this node's name in the catalog (default: the host name)")
	f.StringVar(&o.advertiseAPI, "advertise-api", "", "address other fleet nodes reach this node's API at (default: --api-addr)")
	f.StringVar(&o.advertiseEnvd, "advertise-envd", "", "address other fleet nodes reach this node's envd at (default: --envd-addr)")
	f.StringVar(&o.tokenFile, "fleet-token-file", "", "file holding the fleet token nodes call each other with (default: $HERMES_FLEET_TOKEN)")
	f.IntVar(&o.cpu, "node-cpu", 0, "vCPUs this node gives sandboxes (default: 4 × its CPUs; a sandbox takes terminal.container_cpu)")
	f.Int64Var(&o.memoryMB, "node-memory-mb", 0, "MiB this node gives sandboxes (default: 4 × its memory; a sandbox takes terminal.container_memory)")
	f.DurationVar(&o.heartbeat, "fleet-heartbeat", 5*time.Second, "how often this node renews its heartbeat; a node silent for 3 × this is down")
}

// maxTokenFileBytes bounds the --fleet-token-file read.
const maxTokenFileBytes = 4096

// fleetToken reads the fleet token: --fleet-token-file, else
// HERMES_FLEET_TOKEN. Errors name the file or variable, never the token.
func (a *App) fleetToken(o *fleetOptions) (string, error) {
	if o.tokenFile == "" {
		if tok := strings.TrimSpace(a.Getenv("HERMES_FLEET_TOKEN")); tok != "" {
			return tok, nil
		}
		from := "--catalog postgres://…"
		if o.catalog == "" {
			from = "HERMES_DATABASE_URL, a postgres:// URL, is the catalog unless --catalog names another"
		}
		return "", fmt.Errorf("sandbox serve: a fleet catalog (%s) needs a fleet token: --fleet-token-file FILE or HERMES_FLEET_TOKEN, the same on every node (e.g. `openssl rand -hex 24`)", from)
	}
	f, err := os.Open(o.tokenFile)
	if err != nil {
		return "", fmt.Errorf("--fleet-token-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes))
	if err != nil {
		return "", fmt.Errorf("--fleet-token-file %s: %w", o.tokenFile, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// joinFleet makes srv a node of the fleet on catalog (a PostgreSQL one),
// with need the size of one sandbox. A lone catalog is no fleet: nothing
// to do.
func (a *App) joinFleet(srv *sandboxserver.Server, catalog sandboxcatalog.Catalog, o *sandboxServeOptions, node string, need sandboxcatalog.Need) error {
	pg, ok := catalog.(*sandboxcatalog.Postgres)
	if !ok {
		return nil
	}
	tok, err := a.fleetToken(&o.fleet)
	if err != nil {
		return err
	}
	f := &o.fleet
	self := sandboxcatalog.Node{Name: node, APIAddr: cmp.Or(f.advertiseAPI, o.apiAddr), EnvdAddr: cmp.Or(f.advertiseEnvd, o.envdAddr),
		CPU: cmp.Or(f.cpu, 4*runtime.NumCPU()), MemoryMB: cmp.Or(f.memoryMB, 4*hostMemoryMiB()), MaxSandboxes: o.maxSandboxes}
	for flag, addr := range map[string]string{"--advertise-api": self.APIAddr, "--advertise-envd": self.EnvdAddr} {
		if host, _, err := net.SplitHostPort(addr); err != nil || host == "" || net.ParseIP(host).IsUnspecified() {
			return fmt.Errorf("sandbox serve: other nodes cannot reach %q: give %s HOST:PORT, an address of this node they reach", addr, flag)
		}
	}
	return srv.JoinFleet(sandboxserver.FleetConfig{Catalog: pg, Self: self, Token: tok, Need: need, Heartbeat: f.heartbeat})
}

// hostMemoryMiB is the host's memory (MemTotal of /proc/meminfo), 4096
// when unknown.
func hostMemoryMiB() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 4096
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil && kb > 0 {
				return kb / 1024
			}
		}
	}
	return 4096
}

// catalogURL is the PostgreSQL URL of the catalog and where it came from;
// "" for the one-node SQLite catalog.
func (a *App) catalogURL(o *fleetOptions) (url, source string) {
	if o.catalog != "" {
		return o.catalog, "--catalog"
	}
	if u := strings.TrimSpace(a.Getenv("HERMES_DATABASE_URL")); u != "" {
		return u, "HERMES_DATABASE_URL"
	}
	return "", ""
}

// openCatalog opens the sandbox catalog: PostgreSQL when a URL is given
// (--catalog or HERMES_DATABASE_URL), else SQLite in HERMES_HOME. The log
// names the database, never the URL's password. node is this server's
// name in it ("local" in the one-node catalog).
func (a *App) openCatalog(ctx context.Context, o *fleetOptions, log *slog.Logger) (c sandboxcatalog.Catalog, node string, err error) {
	url, src := a.catalogURL(o)
	if url == "" {
		c, err := sandboxcatalog.OpenSQLite(filepath.Join(a.Home(), sandboxcatalog.FileName))
		return c, "local", err
	}
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, "", fmt.Errorf("sandbox serve: %s is not a postgres:// URL (the fleet's catalog is PostgreSQL); leave it unset for the one-node catalog in HERMES_HOME", src)
	}
	pg, err := openPostgresRetrying(ctx, log, url, func(ctx context.Context) (*sandboxcatalog.Postgres, error) {
		return sandboxcatalog.OpenPostgres(ctx, url, o.schema)
	})
	if err != nil {
		return nil, "", fmt.Errorf("%w (from %s)", err, src)
	}
	log.Info("sandbox catalog", "catalog", pg.Describe(), "from", src, "node", o.nodeName())
	return pg, o.nodeName(), nil
}

// nodeName is this node's name: --node, else the host name.
func (o *fleetOptions) nodeName() string {
	if o.node != "" {
		return o.node
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "local"
	}
	return h
}

// Backoff of the catalog's connection at start (openPostgresRetrying).
const (
	catalogRetryFirst = 500 * time.Millisecond
	catalogRetryMax   = 30 * time.Second
)

// openPostgresRetrying opens the fleet's catalog with open, trying again
// with a doubling wait (catalogRetryFirst to catalogRetryMax) while the
// server cannot be reached or refuses (in Kubernetes, PostgreSQL's pod may
// start after the node's): bounded only by ctx (SIGTERM). Each failed
// attempt is logged once with the host (never the password); an error in
// the URL or schema (sandboxcatalog.ConfigError) returns at once.
func openPostgresRetrying(ctx context.Context, log *slog.Logger, url string,
	open func(context.Context) (*sandboxcatalog.Postgres, error)) (*sandboxcatalog.Postgres, error) {
	wait := catalogRetryFirst
	for attempt := 1; ; attempt++ {
		pg, err := open(ctx)
		var bad *sandboxcatalog.ConfigError
		if err == nil || errors.As(err, &bad) || ctx.Err() != nil {
			return pg, err
		}
		log.Warn("sandbox catalog unreachable: retrying", "host", sandboxcatalog.Host(url), "attempt", attempt,
			"retry_in", wait.String(), "err", sandboxcatalog.Redact(err.Error(), url))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped while retrying: %v)", err, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait = min(2*wait, catalogRetryMax)
	}
}
