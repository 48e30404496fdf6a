package sandboxserver

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// envdSandboxID is the sandbox an envd request names: the E2b-Sandbox-Id
// header, else the Host form the E2B SDKs use without E2B_SANDBOX_URL,
// PORT-SANDBOXID.DOMAIN (as E2B's client-proxy reads it).
func envdSandboxID(r *http.Request) string {
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		return id
	}
	label, _, ok := strings.Cut(r.Host, ".")
	if !ok {
		return ""
	}
	port, id, ok := strings.Cut(label, "-")
	if !ok || port == "" || strings.Trim(port, "0123456789") != "" || id == "" {
		return ""
	}
	return id
}

// routeEnvd proxies an envd request for a sandbox of another node to that
// node's envd and reports whether it did (false: served here). The request
// keeps the sandbox's access token, which the owning node checks; the
// answer streams through as it comes (FlushInterval -1: Connect server
// streams and long uploads are not buffered).
func (s *Server) routeEnvd(w http.ResponseWriter, r *http.Request, id string) bool {
	f := s.fleet
	if f == nil || id == "" || s.lookup(id) != nil {
		return false
	}
	o, err := s.findOwner(r.Context(), id)
	if err != nil {
		s.cfg.Log.Error("look a sandbox up in the catalog", "sandbox", id, "err", err)
		closeUnreadBody(w, r)
		writeError(w, http.StatusServiceUnavailable, "the fleet's catalog cannot be reached to find sandbox %s; retry later", id)
		return true
	}
	if !o.found {
		return false
	}
	n := o.node
	if !o.registered || !o.up {
		closeUnreadBody(w, r)
		why := "is not registered"
		if o.registered {
			why = fmt.Sprintf("is down (no heartbeat for %s)", s.cfg.Now().Sub(n.Heartbeat).Round(time.Second))
		}
		writeNodeDown(w, id, n, why)
		return true
	}
	target := &url.URL{Scheme: "http", Host: n.EnvdAddr}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = n.EnvdAddr
			pr.Out.Header.Set("E2b-Sandbox-Id", id)
			pr.Out.Header.Del(FleetHeader)
			pr.Out.Header.Del(TenantHeader)
		},
		Transport:     f.client,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.cfg.Log.Warn("a fleet node's envd does not answer", "node", n.Name, "err", err)
			writeNodeDown(w, id, n, fmt.Sprintf("does not answer at %s", n.EnvdAddr))
		},
	}
	p.ServeHTTP(w, r)
	return true
}
