package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// fleetOptions are hermes sandbox serve's fleet flags: a shared
// PostgreSQL catalog makes this server one node of a fleet.
type fleetOptions struct {
	catalog string // PostgreSQL URL ("" = HERMES_DATABASE_URL, else SQLite in HERMES_HOME)
	schema  string
	node    string
}

func (o *fleetOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.catalog, "catalog", "", "sandbox catalog: a postgres:// URL shared by a fleet of nodes (default: $HERMES_DATABASE_URL, else HERMES_HOME/sandboxes.db)")
	f.StringVar(&o.schema, "catalog-schema", sandboxcatalog.DefaultSchema, "PostgreSQL schema of the sandbox catalog")
	f.StringVar(&o.node, "node", "", "this node's name in the catalog (default: the host name)")
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
	pg, err := sandboxcatalog.OpenPostgres(ctx, url, o.schema)
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
