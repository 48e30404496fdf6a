package sandboxserver

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Tenancy: every sandbox belongs to the tenant of the key that created
// it, as on E2B, where a key's sandboxes belong to its team. A key given
// alone is a tenant of its own; the keys of one team (Config.Teams) share
// their sandboxes. Another tenant's sandbox is answered as one that does
// not exist (404 on the REST API), never 403, so that its id is not
// confirmed. A keyless server (loopback only) is one tenant.

// tenant names who owns a sandbox: "team:NAME" for a team's keys,
// "key:HASH" for a key of its own (HASH is a digest of the key, not the
// key), "local" for a keyless server.
type tenant string

// localTenant is the one tenant of a keyless server.
const localTenant tenant = "local"

// acceptedKey is an accepted key as the server keeps it: its SHA-256 (so that
// every comparison is of equal lengths) and its tenant.
type acceptedKey struct {
	sum    [32]byte
	tenant tenant
}

// keyTenant is the tenant of a key that is not in a team.
func keyTenant(key string) tenant {
	h := sha256.Sum256([]byte("hermes sandbox tenant\x00" + key))
	return tenant("key:" + hex.EncodeToString(h[:8]))
}

// newAPIKeys builds the key table of lone keys and teams' keys.
func newAPIKeys(lone []string, teams map[string][]string) []acceptedKey {
	var out []acceptedKey
	for _, k := range lone {
		out = append(out, acceptedKey{sum: sha256.Sum256([]byte(k)), tenant: keyTenant(k)})
	}
	for team, keys := range teams {
		for _, k := range keys {
			out = append(out, acceptedKey{sum: sha256.Sum256([]byte(k)), tenant: tenant("team:" + team)})
		}
	}
	return out
}

// tenants counts the distinct tenants of keys (1 for a keyless server).
func tenants(keys []acceptedKey) int {
	seen := map[tenant]bool{}
	for _, k := range keys {
		seen[k.tenant] = true
	}
	return max(len(seen), 1)
}

// tenantOf returns the tenant of key, comparing it with every accepted
// key in constant time (digests of equal length, every key each time);
// ok is false for a key the server does not accept. A keyless server
// accepts anything as localTenant.
func (s *Server) tenantOf(key string) (t tenant, ok bool) {
	if len(s.keys) == 0 {
		return localTenant, true
	}
	h := sha256.Sum256([]byte(key))
	found := -1
	for i, k := range s.keys {
		found = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(h[:], k.sum[:]), i, found)
	}
	if found < 0 || key == "" {
		return "", false
	}
	return s.keys[found].tenant, true
}

type tenantKey struct{}

// withTenant returns r with its caller's tenant in the context.
func withTenant(r *http.Request, t tenant) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), tenantKey{}, t))
}

// tenantOfRequest is the tenant the API middleware resolved for r.
func tenantOfRequest(r *http.Request) tenant {
	t, _ := r.Context().Value(tenantKey{}).(tenant)
	return t
}

// owned returns sandbox id when it belongs to t, else nil (whether it
// exists or not).
func (s *Server) owned(id string, t tenant) *sandbox {
	sb := s.lookup(id)
	if sb == nil || sb.tenant != t {
		return nil
	}
	return sb
}

// countOf counts the sandboxes of t; s.mu is held.
func (s *Server) countOf(t tenant) int {
	n := 0
	for _, sb := range s.sandboxes {
		if sb.tenant == t {
			n++
		}
	}
	return n
}

// ParseAPIKeys reads an API keys file (hermes sandbox serve
// --api-keys-file): one key a line, "KEY" (a tenant of its own) or
// "TEAM KEY" (the keys of one team share their sandboxes); blank lines
// and lines starting with # are skipped. name is the file's name, for
// errors, which give the line number but never the line (it holds a key).
func ParseAPIKeys(r io.Reader, name string) (lone []string, teams map[string][]string, err error) {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch f := strings.Fields(line); len(f) {
		case 1:
			lone = append(lone, f[0])
		case 2:
			if teams == nil {
				teams = map[string][]string{}
			}
			teams[f[0]] = append(teams[f[0]], f[1])
		default:
			return nil, nil, fmt.Errorf("%s line %d: write KEY or TEAM KEY (%d words found)", name, n, len(f))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return lone, teams, nil
}
