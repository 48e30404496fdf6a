package sandboxserver

import (
	"context"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// Routing asks the catalog twice (the sandbox's row, its node's row) per
// request; an owner the catalog named within the last ownerFreshFor (1 s)
// is routed to without asking. The owner is the authority on its
// sandboxes, so a stale entry costs nothing wrong: a sandbox killed
// meanwhile answers 404 from its node, and a node that died within the
// second answers 503 "does not answer" instead of "is down".
//
// A database outage must not stop a fleet's running sandboxes: every node
// keeps an owner cache, the owning node (its advertised addresses) and the
// tenant of each sandbox of another node it routed a request for, stamped
// with when the catalog last said so. While the catalog cannot be reached
// (an error, or no answer within catalogLookupTimeout; placing, within
// placeTimeout), a request for a
// sandbox the catalog named within the last FleetConfig.OwnerCacheFor
// (default 10 min) is routed to that node, as if it were up; an older or
// unknown entry, and every create, answers 503 in E2B's shape saying the
// catalog cannot be reached. The cache holds at most maxOwnerEntries.

// catalogLookupTimeout bounds a routing lookup in the catalog: a database
// that hangs (a partition, not a refused connection) is an outage too.
const catalogLookupTimeout = 5 * time.Second

// placeTimeout bounds placing a create (it waits for the node rows' locks
// while other creates place).
const placeTimeout = 15 * time.Second

// maxOwnerEntries bounds the owner cache (about 200 bytes an entry).
const maxOwnerEntries = 100_000

// ownerFreshFor is how long an owner the catalog named is routed to
// without asking the catalog again.
const ownerFreshFor = time.Second

// defaultOwnerCacheFor is FleetConfig.OwnerCacheFor's default.
const defaultOwnerCacheFor = 10 * time.Minute

// ownerEntry is what the catalog last said of a sandbox of another node.
type ownerEntry struct {
	node   sandboxcatalog.Node
	tenant string
	seen   time.Time
}

// owners is a node's owner cache (sandbox id → entry).
type owners struct {
	mu      sync.Mutex
	entries map[string]ownerEntry
}

// remember records that sandbox id of tenant is on node n as of now.
func (o *owners) remember(id, tenant string, n sandboxcatalog.Node, now, oldest time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.entries == nil {
		o.entries = map[string]ownerEntry{}
	}
	if _, ok := o.entries[id]; !ok && len(o.entries) >= maxOwnerEntries {
		for k, e := range o.entries { // expired ones first, then any
			if e.seen.Before(oldest) {
				delete(o.entries, k)
			}
		}
		for k := range o.entries {
			if len(o.entries) < maxOwnerEntries {
				break
			}
			delete(o.entries, k)
		}
	}
	o.entries[id] = ownerEntry{node: n, tenant: tenant, seen: now}
}

// recall returns id's entry if it was seen at oldest or later.
func (o *owners) recall(id string, oldest time.Time) (ownerEntry, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[id]
	if !ok || e.seen.Before(oldest) {
		return ownerEntry{}, false
	}
	return e, true
}

// forget drops id (the catalog says it is gone or here).
func (o *owners) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.entries, id)
}

// ownerLookup is where a request for sandbox id goes.
type ownerLookup struct {
	// found: the sandbox is another node's (else serve here: this node's,
	// or unknown, which answers 404 here).
	found  bool
	tenant string
	node   sandboxcatalog.Node
	// registered and up: the node's state (up when routed from the cache).
	registered, up bool
	// cached: the catalog could not be reached; routed from the cache.
	cached bool
}

// findOwner looks sandbox id up in the catalog, falling back on the owner
// cache while the catalog cannot be reached; err is the catalog's error
// when the cache has no fresh entry either.
func (s *Server) findOwner(ctx context.Context, id string) (ownerLookup, error) {
	f := s.fleet
	ctx, cancel := context.WithTimeout(ctx, catalogLookupTimeout)
	defer cancel()
	now := s.cfg.Now()
	if e, fresh := f.owners.recall(id, now.Add(-ownerFreshFor)); fresh {
		return ownerLookup{found: true, tenant: e.tenant, node: e.node, registered: true, up: true}, nil
	}
	rec, ok, err := f.cfg.Catalog.Get(ctx, id)
	if err == nil && (!ok || rec.Node == f.cfg.Self.Name) {
		f.owners.forget(id)
		return ownerLookup{}, nil
	}
	var l ownerLookup
	if err == nil {
		l = ownerLookup{found: true, tenant: rec.Tenant}
		var nodeErr error
		l.node, l.registered, nodeErr = f.cfg.Catalog.Node(ctx, rec.Node)
		if nodeErr == nil {
			l.node.Name = rec.Node
			l.up = l.registered && l.node.Up(now, f.cfg.DownAfter)
			if l.up {
				f.owners.remember(id, rec.Tenant, l.node, now, now.Add(-f.cfg.OwnerCacheFor))
			}
			return l, nil
		}
		err = nodeErr
	}
	e, fresh := f.owners.recall(id, now.Add(-f.cfg.OwnerCacheFor))
	if !fresh {
		return ownerLookup{}, err
	}
	s.cfg.Log.Warn("the fleet's catalog cannot be reached; routing from the owner cache", "sandbox", id, "node", e.node.Name,
		"seen", now.Sub(e.seen).Round(time.Second).String(), "err", err)
	return ownerLookup{found: true, tenant: e.tenant, node: e.node, registered: true, up: true, cached: true}, nil
}
