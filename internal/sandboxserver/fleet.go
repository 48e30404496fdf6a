package sandboxserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// A fleet (issue 29): many servers, one PostgreSQL catalog, any node
// answering any request.
//
//   - Each node registers itself (sandboxcatalog.Node: name, advertised
//     API and envd addresses, capacity) and renews its heartbeat every
//     FleetConfig.Heartbeat; a node silent for DownAfter is down.
//   - POST /sandboxes places the sandbox (sandboxcatalog.Postgres.Place:
//     the least loaded node up that fits, the node asked on a tie, one
//     transaction locking the node rows) and forwards the create there
//     with the id chosen.
//   - get, pause, resume/connect, timeout and kill go to the node the
//     sandbox's record names; list is read from the catalog.
//   - envd requests (E2b-Sandbox-Id header, or the Host form
//     PORT-SANDBOXID.domain) are proxied to the owning node's envd,
//     streams flushed as they come (Connect server streams, uploads).
//   - A sandbox on a down node, or on one that does not answer, gets a
//     503 in E2B's {code, message} shape naming the node; never a hang.
//
// Node to node, the REST API is called with the fleet token (FleetHeader,
// compared in constant time) and the caller's tenant (TenantHeader),
// never the client's key, which is removed. envd requests carry the
// sandbox's own access token, as from the client.

// FleetHeader carries the fleet token on node-to-node calls.
const FleetHeader = "X-Hermes-Fleet-Token"

// TenantHeader carries the client's tenant on node-to-node calls.
const TenantHeader = "X-Hermes-Tenant"

// idHeader carries the id a placing node chose for a forwarded create.
const idHeader = "X-Hermes-Sandbox-Id"

// FleetCatalog is what a fleet needs of its catalog
// (sandboxcatalog.Postgres).
type FleetCatalog interface {
	sandboxcatalog.Catalog
	Register(ctx context.Context, n sandboxcatalog.Node, now time.Time) error
	Heartbeat(ctx context.Context, node string, now time.Time) error
	Node(ctx context.Context, name string) (sandboxcatalog.Node, bool, error)
	Place(ctx context.Context, id string, need sandboxcatalog.Need, prefer string, now time.Time, bound time.Duration) (sandboxcatalog.Node, error)
	Placed(ctx context.Context, id string) error
	Get(ctx context.Context, id string) (sandboxcatalog.Record, bool, error)
	ListTenant(ctx context.Context, tenant string) ([]sandboxcatalog.Record, error)
}

// FleetConfig makes a Server one node of a fleet.
type FleetConfig struct {
	// Catalog is the fleet's shared catalog (also Config.Catalog).
	Catalog FleetCatalog
	// Self is this node (Name equal to Config.Node).
	Self sandboxcatalog.Node
	// Token is the fleet token every node is given (at least 16 bytes).
	Token string
	// Need is what one sandbox takes of a node (placement).
	Need sandboxcatalog.Need
	// Heartbeat is how often the node renews its heartbeat (default
	// 5 s); DownAfter how old a heartbeat makes a node down (default
	// 3 × Heartbeat).
	Heartbeat, DownAfter time.Duration
	// OwnerCacheFor is how long, while the catalog cannot be reached,
	// requests keep routing to the node the catalog last named for a
	// sandbox (default 10 min; fleet_owners.go).
	OwnerCacheFor time.Duration
}

// fleet is a Server's fleet state.
type fleet struct {
	cfg      FleetConfig
	tokenSum [32]byte
	client   *http.Transport
	owners   owners
}

// JoinFleet makes s a node of the fleet cfg names: Run registers it and
// keeps its heartbeat; the handlers route from then on. Call before
// serving.
func (s *Server) JoinFleet(cfg FleetConfig) error {
	if cfg.Catalog == nil {
		return errors.New("sandboxserver: a fleet needs a shared catalog")
	}
	if len(cfg.Token) < 16 {
		return errors.New("sandbox serve: the fleet token must be at least 16 characters (--fleet-token-file or HERMES_FLEET_TOKEN; e.g. `openssl rand -hex 24`)")
	}
	if cfg.Self.Name != s.cfg.Node {
		return fmt.Errorf("sandboxserver: fleet node %q is not the server's node %q", cfg.Self.Name, s.cfg.Node)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	if cfg.DownAfter <= 0 {
		cfg.DownAfter = 3 * cfg.Heartbeat
	}
	if cfg.OwnerCacheFor <= 0 {
		cfg.OwnerCacheFor = defaultOwnerCacheFor
	}
	if cfg.Need.CPU <= 0 {
		cfg.Need.CPU = 1
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.ResponseHeaderTimeout = 0
	tr.MaxIdleConnsPerHost = 64
	// Uploads and downloads pass through: fewer, larger writes than the
	// 4 KiB default.
	tr.WriteBufferSize, tr.ReadBufferSize = 128<<10, 128<<10
	s.fleet = &fleet{cfg: cfg, tokenSum: sha256.Sum256([]byte(cfg.Token)), client: tr}
	return nil
}

// RunFleet registers the node and renews its heartbeat until ctx ends.
// The first registration's error is returned at once; later heartbeat
// failures are logged (the node goes on serving its own sandboxes).
func (s *Server) RunFleet(ctx context.Context) error {
	f := s.fleet
	if f == nil {
		return nil
	}
	if err := f.cfg.Catalog.Register(ctx, f.cfg.Self, s.cfg.Now()); err != nil {
		return err
	}
	s.cfg.Log.Info("fleet node registered", "node", f.cfg.Self.Name, "api", f.cfg.Self.APIAddr, "envd", f.cfg.Self.EnvdAddr,
		"cpu", f.cfg.Self.CPU, "memory_mb", f.cfg.Self.MemoryMB, "max_sandboxes", f.cfg.Self.MaxSandboxes)
	go func() {
		tick := time.NewTicker(f.cfg.Heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			err := f.cfg.Catalog.Heartbeat(ctx, f.cfg.Self.Name, s.cfg.Now())
			if err != nil && ctx.Err() == nil {
				s.cfg.Log.Error("fleet heartbeat", "err", err)
				// A row removed by an operator: register again.
				_ = f.cfg.Catalog.Register(ctx, f.cfg.Self, s.cfg.Now())
			}
		}
	}()
	return nil
}

// fleetCaller reports whether r is a node-to-node call: it carries the
// fleet token (compared in constant time, digests of equal length).
func (s *Server) fleetCaller(r *http.Request) (carries, ok bool) {
	got := r.Header.Get(FleetHeader)
	if s.fleet == nil || got == "" {
		return got != "", false
	}
	sum := sha256.Sum256([]byte(got))
	return true, subtle.ConstantTimeCompare(sum[:], s.fleet.tokenSum[:]) == 1
}

type presetIDKey struct{}

// presetID is the id a placing node chose for a forwarded create ("" if none).
func presetID(r *http.Request) string {
	id, _ := r.Context().Value(presetIDKey{}).(string)
	return id
}

// writeNodeDown answers for a sandbox whose node is down or silent.
func writeNodeDown(w http.ResponseWriter, id string, n sandboxcatalog.Node, why string) {
	writeError(w, http.StatusServiceUnavailable, "sandbox %s is on node %s, which %s; its sandboxes are served again when the node is back", id, n.Name, why)
}

// routeAPI serves r elsewhere in the fleet when it belongs there, and
// reports whether it did. Forwarded calls are never routed again.
func (s *Server) routeAPI(w http.ResponseWriter, r *http.Request, t tenant) bool {
	f := s.fleet
	if f == nil {
		return false
	}
	path := strings.TrimPrefix(r.URL.Path, "/v2")
	switch {
	case r.Method == http.MethodPost && path == "/sandboxes":
		s.placeCreate(w, r, t)
		return true
	case r.Method == http.MethodGet && path == "/sandboxes":
		return false // read from the catalog (filtered)
	case strings.HasPrefix(path, "/sandboxes/"):
		id, _, _ := strings.Cut(strings.TrimPrefix(path, "/sandboxes/"), "/")
		return s.routeOwned(w, r, t, id)
	}
	return false
}

// placeCreate places a new sandbox and creates it here or on the node chosen.
func (s *Server) placeCreate(w http.ResponseWriter, r *http.Request, t tenant) {
	f := s.fleet
	id := s.cfg.NewID()
	ctx, cancel := context.WithTimeout(r.Context(), placeTimeout)
	n, err := f.cfg.Catalog.Place(ctx, id, f.cfg.Need, f.cfg.Self.Name, s.cfg.Now(), f.cfg.DownAfter)
	cancel()
	var noRoom *sandboxcatalog.NoRoomError
	switch {
	case errors.As(err, &noRoom):
		writeError(w, http.StatusServiceUnavailable, "%v", err)
		return
	case err != nil:
		s.cfg.Log.Error("place a sandbox", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the fleet's catalog cannot be reached, so no sandbox is placed now; retry later")
		return
	}
	defer func() {
		if err := f.cfg.Catalog.Placed(context.WithoutCancel(r.Context()), id); err != nil {
			s.cfg.Log.Error("drop a placement", "sandbox", id, "err", err)
		}
	}()
	if n.Name == f.cfg.Self.Name {
		s.handleCreate(w, r.WithContext(context.WithValue(r.Context(), presetIDKey{}, id)))
		return
	}
	s.cfg.Log.Info("sandbox placed on another node", "sandbox", id, "node", n.Name)
	s.forwardAPI(w, r, t, n, id, true)
}

// routeOwned sends a request about sandbox id to its node; false when it
// is served here (this node's, unknown, or another tenant's: 404 here).
func (s *Server) routeOwned(w http.ResponseWriter, r *http.Request, t tenant, id string) bool {
	if s.lookup(id) != nil {
		return false
	}
	o, err := s.findOwner(r.Context(), id)
	if err != nil {
		s.cfg.Log.Error("look a sandbox up in the catalog", "sandbox", id, "err", err)
		writeError(w, http.StatusServiceUnavailable, "the fleet's catalog cannot be reached to find sandbox %s; retry later", id)
		return true
	}
	if !o.found || o.tenant != string(t) {
		return false
	}
	n := o.node
	if !o.registered {
		writeNodeDown(w, id, n, "is not registered")
		return true
	}
	if !o.up {
		writeNodeDown(w, id, n, fmt.Sprintf("is down (no heartbeat for %s)", s.cfg.Now().Sub(n.Heartbeat).Round(time.Second)))
		return true
	}
	s.forwardAPI(w, r, t, n, id, false)
	return true
}

// forwardAPI proxies r to node n's API as a fleet call for tenant t
// (the client's key removed) about sandbox id; create passes id as the
// create's chosen id.
func (s *Server) forwardAPI(w http.ResponseWriter, r *http.Request, t tenant, n sandboxcatalog.Node, id string, create bool) {
	target := &url.URL{Scheme: "http", Host: n.APIAddr}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = n.APIAddr
			h := pr.Out.Header
			h.Del("X-API-Key")
			h.Del("Authorization")
			h.Set(FleetHeader, s.fleet.cfg.Token)
			h.Set(TenantHeader, string(t))
			h.Del(idHeader)
			if create {
				h.Set(idHeader, id)
			}
		},
		Transport:     s.fleet.client,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.cfg.Log.Warn("a fleet node does not answer", "node", n.Name, "err", err)
			writeNodeDown(w, id, n, fmt.Sprintf("does not answer at %s", n.APIAddr))
		},
	}
	p.ServeHTTP(w, r)
}

// fleetList lists t's sandboxes on every node from the catalog.
func (s *Server) fleetList(ctx context.Context, t tenant) ([]*sandbox, error) {
	recs, err := s.fleet.cfg.Catalog.ListTenant(ctx, string(t))
	if err != nil {
		return nil, err
	}
	out := make([]*sandbox, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		r := recs[i]
		if sb := s.lookup(r.ID); sb != nil {
			out = append(out, sb)
			continue
		}
		sb := s.fromRecord(r)
		sb.state = r.State
		out = append(out, sb)
	}
	return out, nil
}
