package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// logLines is a log destination a test reads while the code under test
// writes: each line is kept, and retried is signalled on each retry line.
type logLines struct {
	mu      sync.Mutex
	text    strings.Builder
	retried chan struct{}
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.text.Write(p)
	l.mu.Unlock()
	if strings.Contains(string(p), "sandbox catalog unreachable: retrying") {
		select {
		case l.retried <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// relayUnix serves a PostgreSQL socket at dir/.s.PGSQL.port that relays
// each connection to the real server at target (network, address).
func relayUnix(t *testing.T, dir string, port uint16, network, target string) {
	ln, err := net.Listen("unix", filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial(network, target)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
}

// A fleet node whose catalog cannot be reached at start (PostgreSQL's pod
// not up yet) retries, logging each attempt with the host and never the
// password, and opens the catalog once the server listens.
func TestCatalogRetriedUntilTheServerListens(t *testing.T) {
	real, schema := postgrestest.Schema(t)
	cfg, err := pgconn.ParseConfig(real)
	if err != nil {
		t.Fatal(err)
	}
	network, target := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, target = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	dir, err := os.MkdirTemp("", "pgrelay") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	q := url.Values{"host": {dir}, "port": {fmt.Sprint(cfg.Port)}, "user": {cfg.User}, "dbname": {cfg.Database},
		"password": {"s3cret-relay-pw"}, "sslmode": {"disable"}}
	if cfg.Password != "" {
		q.Set("password", cfg.Password)
	}
	relayURL := "postgres:///?" + q.Encode()

	logs := &logLines{retried: make(chan struct{}, 1)}
	log := slog.New(slog.NewTextHandler(logs, nil))
	type result struct {
		pg  *sandboxcatalog.Postgres
		err error
	}
	done := make(chan result, 1)
	go func() {
		pg, err := openPostgresRetrying(context.Background(), log, relayURL, func(ctx context.Context) (*sandboxcatalog.Postgres, error) {
			return sandboxcatalog.OpenPostgres(ctx, relayURL, schema)
		})
		done <- result{pg, err}
	}()
	<-logs.retried // the first attempt failed: nothing listens yet
	relayUnix(t, dir, cfg.Port, network, target)
	r := <-done
	if r.err != nil {
		t.Fatalf("open after the server came up: %v\n%s", r.err, logs)
	}
	r.pg.Close()
	out := logs.String()
	if !strings.Contains(out, "host="+dir) || !strings.Contains(out, "attempt=1") || strings.Contains(out, "s3cret-relay-pw") {
		t.Fatalf("retry log:\n%s", out)
	}
}

// The retry ends with the context (SIGTERM), and a bad URL is not retried.
func TestCatalogRetryEndsWithTheContext(t *testing.T) {
	logs := &logLines{retried: make(chan struct{}, 1)}
	log := slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancelCause(context.Background())
	url := "postgres://hermes:s3cret-pw@127.0.0.1:1/fleet"
	done := make(chan error, 1)
	go func() {
		_, err := openPostgresRetrying(ctx, log, url, func(ctx context.Context) (*sandboxcatalog.Postgres, error) {
			return sandboxcatalog.OpenPostgres(ctx, url, "")
		})
		done <- err
	}()
	<-logs.retried
	cancel(SignalError{Signal: 15})
	if err := <-done; err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "s3cret-pw") ||
		!strings.Contains(err.Error(), "terminated") {
		t.Fatalf("after SIGTERM: %v", err)
	}
	_, err := openPostgresRetrying(context.Background(), log, "postgres://x/?sslmode=nonsense", func(ctx context.Context) (*sandboxcatalog.Postgres, error) {
		return sandboxcatalog.OpenPostgres(ctx, "postgres://x/?sslmode=nonsense", "")
	})
	var bad *sandboxcatalog.ConfigError
	if !errors.As(err, &bad) {
		t.Fatalf("a bad URL: %v", err)
	}
}

// A fleet catalog taken from HERMES_DATABASE_URL (no --catalog) without a
// token says where the catalog came from (a new user who set the URL for
// sessions only saw --catalog named).
func TestFleetTokenMissingNamesTheCatalogSource(t *testing.T) {
	a := &App{Getenv: func(string) string { return "" }}
	_, err := a.fleetToken(&fleetOptions{})
	if err == nil || !strings.Contains(err.Error(), "HERMES_DATABASE_URL") || !strings.Contains(err.Error(), "HERMES_FLEET_TOKEN") {
		t.Fatalf("no token, catalog from HERMES_DATABASE_URL: %v", err)
	}
	_, err = a.fleetToken(&fleetOptions{catalog: "postgres://db/x"})
	if err == nil || !strings.Contains(err.Error(), "--catalog") || strings.Contains(err.Error(), "HERMES_DATABASE_URL") {
		t.Fatalf("no token, --catalog given: %v", err)
	}
}
