package acp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/session"
)

// DefaultMaxRuntimes is how many workspaces' runtimes a connection keeps
// started (Options.MaxRuntimes).
const DefaultMaxRuntimes = 8

// rtEntry is a started runtime of one workspace.
type rtEntry struct {
	rt    *session.Runtime
	used  uint64 // Server.tick at its last use
	users int    // requests holding it (between runtime and release)
}

// runtime returns the runtime of workspace cwd, starting it on first use;
// the caller calls release once the session it opens is registered (or
// it is done with the runtime's store). Starting one past
// Options.MaxRuntimes closes the least recently used runtimes that have no
// open session and no request holding them: a client opening sessions in
// ever new directories does not grow memory without bound, and open
// sessions keep their runtime. Runtimes with open sessions are never
// closed (session/close frees them).
func (s *Server) runtime(ctx context.Context, cwd string) (rt *session.Runtime, release func(), err error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q must be an absolute path", cwd)})
	}
	cwd = filepath.Clean(cwd)
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		// The editor's workspace, not terminal.cwd: the runtime's own
		// message would send the person to config.yaml.
		return nil, nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not a directory on the agent's machine; open a folder that exists", cwd)})
	}
	if e := s.useRuntime(cwd); e != nil {
		return e.rt, s.releaser(e), nil
	}
	// Started without the lock: a box backend may take a while, and the
	// file tools of other sessions look sessions up meanwhile.
	rt, err = s.opts.NewRuntime(context.WithoutCancel(ctx), cwd, fileAccess{s})
	if err != nil {
		return nil, nil, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	s.mu.Lock()
	if other, ok := s.runtimes[cwd]; ok { // another request started one first
		s.tick++
		other.used, other.users = s.tick, other.users+1
		s.mu.Unlock()
		_ = rt.Close()
		return other.rt, s.releaser(other), nil
	}
	s.tick++
	e := &rtEntry{rt: rt, used: s.tick, users: 1}
	s.runtimes[cwd] = e
	idle := s.evictLocked()
	s.mu.Unlock()
	for _, old := range idle {
		if err := old.Close(); err != nil {
			s.opts.Logger.Warn("closing an idle workspace runtime", "err", err)
		}
	}
	return rt, s.releaser(e), nil
}

// useRuntime returns the started runtime of cwd, held, or nil.
func (s *Server) useRuntime(cwd string) *rtEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.runtimes[cwd]
	if !ok {
		return nil
	}
	s.tick++
	e.used, e.users = s.tick, e.users+1
	return e
}

func (s *Server) releaser(e *rtEntry) func() {
	return func() {
		s.mu.Lock()
		e.users--
		s.mu.Unlock()
	}
}

// evictLocked removes, least recently used first, idle runtimes (no open
// session, not held) while more than MaxRuntimes are started, and returns
// them to be closed outside the lock.
func (s *Server) evictLocked() []*session.Runtime {
	live := map[*session.Runtime]bool{}
	for _, as := range s.sessions {
		live[as.rt] = true
	}
	var out []*session.Runtime
	for len(s.runtimes) > s.opts.MaxRuntimes {
		oldest := ""
		for cwd, e := range s.runtimes {
			if e.users > 0 || live[e.rt] {
				continue
			}
			if oldest == "" || e.used < s.runtimes[oldest].used {
				oldest = cwd
			}
		}
		if oldest == "" {
			break // every runtime serves an open session or a request
		}
		out = append(out, s.runtimes[oldest].rt)
		delete(s.runtimes, oldest)
	}
	return out
}
