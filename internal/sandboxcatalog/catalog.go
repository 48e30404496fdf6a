// Package sandboxcatalog keeps the sandboxes of hermes sandbox serve
// across restarts of the server: one Record per sandbox, written at every
// change of its lifecycle (create, pause, resume, timeout, kill) and read
// back when the server starts (sandboxserver.Server.Restore).
//
// Catalog is the interface; OpenSQLite is its one-node implementation
// (HERMES_HOME/sandboxes.db) and OpenPostgres a fleet's shared one
// (postgres.go), Record.Node naming the node that holds a sandbox's
// layer; it also keeps the fleet's nodes and places sandboxes (fleet.go).
// catalogtest.Run is the conformance suite every implementation passes.
package sandboxcatalog

import (
	"context"
	"errors"
	"time"
)

// States of a sandbox, as E2B names them.
const (
	StateRunning = "running"
	StatePaused  = "paused"
)

// Network is E2B's SandboxNetworkConfig as the client gave it at create.
type Network struct {
	AllowOut []string `json:"allowOut,omitempty"`
	DenyOut  []string `json:"denyOut,omitempty"`
}

// Record is one sandbox as the catalog keeps it: what the server needs to
// serve it again after a restart. It holds what E2B keeps of a sandbox,
// the envd access token and the envVars included (both secrets: an
// implementation stores them where only the server's user reads them, and
// nothing logs a Record). It never holds an API key: Tenant is a digest.
type Record struct {
	// ID is the sandbox id (E2B's sandboxID); Task its box task id.
	ID, Task string
	// Node names the server whose disk holds the sandbox's layer.
	Node string
	// Tenant owns the sandbox ("key:DIGEST", "team:NAME" or "local").
	Tenant string
	// Template is the template id the sandbox was created from.
	Template string
	// State is StateRunning or StatePaused.
	State string
	// Resume marks a sandbox that the server's shutdown paused (not its
	// client): the next start of the server runs it again, its timeout
	// Remaining.
	Resume bool
	// Remaining is the timeout left when a shutdown paused it (Resume).
	Remaining time.Duration
	// AutoPause pauses the sandbox at its timeout instead of killing it.
	AutoPause bool
	// StartedAt is when the sandbox was created; EndAt when its timeout
	// ends (or ended) while it runs.
	StartedAt, EndAt time.Time
	// Token is the sandbox's envdAccessToken.
	Token string
	// Metadata and Env are the client's metadata and the sandbox's
	// environment (template, server and client envVars merged).
	Metadata, Env map[string]string
	// AllowInternet is the client's allow_internet_access (nil: not given).
	AllowInternet *bool
	// Network is the client's network config (nil: not given).
	Network *Network
}

// ErrClosed is returned by a Catalog used after Close.
var ErrClosed = errors.New("sandbox catalog: closed")

// Catalog stores Records. Implementations are safe for concurrent use;
// every method returns once the change is durable (committed), so a
// server killed right after loses nothing it acknowledged.
type Catalog interface {
	// Put inserts rec, or replaces the record with its ID.
	Put(ctx context.Context, rec Record) error
	// Delete removes the record of id; a missing one is no error.
	Delete(ctx context.Context, id string) error
	// List returns the records of node, oldest first (StartedAt, then ID).
	List(ctx context.Context, node string) ([]Record, error)
	// Close releases the catalog.
	Close() error
}
