package sandboxserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/httpguard"
)

// The REST API of E2B (github.com/e2b-dev/E2B spec/openapi.yml, Apache-2.0):
// request and response field names are E2B's.

var errNotExist = fs.ErrNotExist

// errShuttingDown answers creates and resumes while the server stops.
const errShuttingDown = "hermes sandbox serve is shutting down: no sandbox is created or resumed now; retry when it is back (its sandboxes are kept, paused)"

// maxJSONBody bounds a REST request body.
const maxJSONBody = 1 << 20

// networkConfig is E2B's SandboxNetworkConfig (the parts a box honours).
type networkConfig struct {
	AllowOut []string `json:"allowOut,omitempty"`
	DenyOut  []string `json:"denyOut,omitempty"`
}

// newSandboxRequest is E2B's NewSandbox.
type newSandboxRequest struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int              `json:"timeout"`
	EnvVars             map[string]string `json:"envVars"`
	Metadata            map[string]string `json:"metadata"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             *networkConfig    `json:"network"`
	AutoPause           bool              `json:"autoPause"`
	Secure              bool              `json:"secure"`
}

// sandboxJSON is E2B's Sandbox (create and connect answers).
type sandboxJSON struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	Alias              string  `json:"alias,omitempty"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	Domain             *string `json:"domain"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
}

// sandboxDetailJSON is E2B's SandboxDetail and ListedSandbox.
type sandboxDetailJSON struct {
	TemplateID          string            `json:"templateID"`
	SandboxID           string            `json:"sandboxID"`
	Alias               string            `json:"alias,omitempty"`
	ClientID            string            `json:"clientID"`
	StartedAt           time.Time         `json:"startedAt"`
	EndAt               time.Time         `json:"endAt"`
	CPUCount            int               `json:"cpuCount"`
	MemoryMB            int               `json:"memoryMB"`
	DiskSizeMB          int               `json:"diskSizeMB"`
	State               string            `json:"state"`
	EnvdVersion         string            `json:"envdVersion"`
	EnvdAccessToken     string            `json:"envdAccessToken,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	AllowInternetAccess *bool             `json:"allowInternetAccess,omitempty"`
	Network             *networkConfig    `json:"network,omitempty"`
	Domain              *string           `json:"domain"`
}

// apiError is E2B's Error.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Code: status, Message: fmt.Sprintf(format, args...)})
}

// APIHandler serves the E2B REST API.
func (s *Server) APIHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sandboxes", s.handleCreate)
	mux.HandleFunc("POST /v2/sandboxes", s.handleCreate)
	mux.HandleFunc("GET /sandboxes", s.handleListV1)
	mux.HandleFunc("GET /v2/sandboxes", s.handleList)
	mux.HandleFunc("GET /sandboxes/{id}", s.handleGet)
	mux.HandleFunc("DELETE /sandboxes/{id}", s.handleKill)
	mux.HandleFunc("POST /sandboxes/{id}/timeout", s.handleTimeout)
	mux.HandleFunc("POST /sandboxes/{id}/pause", s.handlePause)
	mux.HandleFunc("POST /sandboxes/{id}/resume", s.handleConnect)
	mux.HandleFunc("POST /sandboxes/{id}/connect", s.handleConnect)
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", s.handleConnect)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	// Everything else (sandbox metrics and logs, templates, snapshots,
	// volumes) is E2B API that hermes does not serve: say so in E2B's
	// {code, message} shape, which the SDK and CLI print.
	// The answer does not depend on the sandbox a path names (metrics,
	// logs): it confirms no other tenant's sandbox.
	mux.HandleFunc("/", notServed)
	return s.guard(nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			mux.ServeHTTP(w, r)
			return
		}
		carries, fleetOK := s.fleetCaller(r)
		t, ok := s.tenantOf(apiKey(r))
		if carries {
			// A node of the fleet forwarding a client's call: the tenant
			// it resolved from the client's key, which it kept.
			t, ok = tenant(r.Header.Get(TenantHeader)), fleetOK && r.Header.Get(TenantHeader) != ""
		}
		if !ok {
			closeUnreadBody(w, r)
			writeError(w, http.StatusUnauthorized, "invalid or missing API key (X-API-Key header; set E2B_API_KEY to a key hermes sandbox serve was given)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
		r = withTenant(r, t)
		if carries {
			if id := r.Header.Get(idHeader); id != "" {
				r = r.WithContext(context.WithValue(r.Context(), presetIDKey{}, id))
			}
		} else if s.routeAPI(w, r, t) {
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

func notServed(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "%s %s is not served by hermes sandbox serve (it serves sandbox create, list, get, kill, timeout, pause, resume and connect)", r.Method, r.URL.Path)
}

// guard puts h behind the listeners' httpguard.Policy (browser pages of
// other origins refused, and DNS-rebound Host names when the server has
// no key; bodies of bodyTypes(r), JSON when nil) and bounds the time its
// request bodies take.
func (s *Server) guard(bodyTypes func(*http.Request) []string, h http.Handler) http.Handler {
	p := httpguard.Policy{Keyed: len(s.keys) > 0, KeyHint: "an API key (--api-key)", BodyTypes: bodyTypes,
		Refuse: func(w http.ResponseWriter, status int, _, msg string) { writeError(w, status, "%s", msg) }}
	return httpguard.BodyDeadline(p.Handler(h), s.cfg.BodyTimeout)
}

func apiKey(r *http.Request) string {
	if k := r.Header.Get("X-API-Key"); k != "" {
		return k
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return a
	}
	return ""
}

// decodeBody reads r's JSON body into v; an empty body leaves v as is.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("body is not the expected JSON: %v", err)
	}
	return nil
}

// egressRules maps allow_internet_access and network onto the egress
// gate's allow and deny lists, and says whether the sandbox has the
// internet. The gate lets deny win where E2B lets allowOut win, so a deny
// of all traffic (0.0.0.0/0) is read as "no internet" plus allowOut,
// which is what E2B gives. The operator's rules are added by NewEgress.
func egressRules(allowInternet *bool, n *networkConfig) (allow, deny []string, internet bool) {
	internet = allowInternet == nil || *allowInternet
	if n != nil {
		allow = append(allow, n.AllowOut...)
		for _, d := range n.DenyOut {
			if d == "0.0.0.0/0" || d == "::/0" {
				internet = false
				continue
			}
			deny = append(deny, d)
		}
	}
	if internet {
		allow = append(allow, "*", "0.0.0.0/0", "::/0")
	}
	return allow, deny, internet
}

// checkAllowOut refuses a client's allowOut entry that would open what
// the egress gate keeps closed unless explicitly allowed: the host's
// loopback, private and link-local (metadata) ranges and its own
// addresses. On E2B, allowOut reaches the internet, never E2B's hosts;
// here only the operator opens those (--allow, terminal.box_network.allow):
// an entry inside one of the operator's allow rules is accepted, so the
// operator's list widens what a client may open for its own sandbox.
func (s *Server) checkAllowOut(n *networkConfig) error {
	if n == nil || len(n.AllowOut) == 0 {
		return nil
	}
	host, _ := s.cfg.InterfaceAddrs()
	for _, e := range n.AllowOut {
		r, err := egress.ParseRule(e)
		if err != nil {
			return err
		}
		if what, ok := egress.OpensReserved(r, host); ok && !s.operatorAllows(r) {
			return fmt.Errorf("network.allowOut entry %q opens %s, which a sandbox may not open for itself; "+
				"the server's operator can (hermes sandbox serve --allow %s)", e, what, e)
		}
	}
	return nil
}

// operatorAllows reports whether r (an address or range rule) lies inside
// one of the operator's allow rules (Config.Allow).
func (s *Server) operatorAllows(r egress.Rule) bool {
	if r.Kind != egress.RulePrefix {
		return false
	}
	for _, e := range s.cfg.Allow {
		op, err := egress.ParseRule(e)
		if err == nil && op.Kind == egress.RulePrefix && op.Prefix.Bits() <= r.Prefix.Bits() && op.Prefix.Contains(r.Prefix.Addr()) &&
			(op.Port == 0 || op.Port == r.Port) {
			return true
		}
	}
	return false
}

// seconds is a client's timeout in seconds as a duration, bounded by
// MaxTimeout before the multiplication (which overflowed: a timeout of
// 18446744074 s became a few tenths of a second).
func (s *Server) seconds(n int) time.Duration {
	return time.Duration(min(max(n, 0), int(s.cfg.MaxTimeout/time.Second))) * time.Second
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req newSandboxRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	tpl, ok := s.cfg.Templates[req.TemplateID]
	if !ok {
		writeError(w, http.StatusNotFound, "template %q not found (this server has: %s)", req.TemplateID, strings.Join(s.templateNames(), ", "))
		return
	}
	if err := s.pullTemplate(r.Context(), req.TemplateID, tpl); err != nil {
		writePullError(w, req.TemplateID, err)
		return
	}
	timeout := 15 * time.Second
	if req.Timeout != nil {
		timeout = s.seconds(*req.Timeout)
	}
	allow, deny, internet := egressRules(req.AllowInternetAccess, req.Network)
	if _, err := egress.NewAllowlist(allow, deny); err != nil {
		writeError(w, http.StatusBadRequest, "network: %v", err)
		return
	}
	if err := s.checkAllowOut(req.Network); err != nil {
		writeError(w, http.StatusForbidden, "%v", err)
		return
	}
	env := map[string]string{}
	for k, v := range tpl.Env {
		env[k] = v
	}
	for k, v := range s.cfg.Env {
		env[k] = v
	}
	for k, v := range req.EnvVars {
		env[k] = v
	}
	owner := tenantOfRequest(r)
	id := presetID(r)
	if id == "" {
		id = s.cfg.NewID()
	}
	sb := &sandbox{id: id, tenant: owner, template: req.TemplateID, token: randomToken(), metadata: req.Metadata,
		env: env, allow: allow, deny: deny, internet: internet, allowInternet: req.AllowInternetAccess, network: req.Network,
		autoPause: req.AutoPause, startedAt: s.cfg.Now(), state: "running", procs: map[uint32]*proc{}, paused: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, errShuttingDown)
		return
	}
	if len(s.sandboxes) >= s.cfg.MaxSandboxes {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "this server already has %d sandboxes, its limit (hermes sandbox serve --max-sandboxes): kill one first", s.cfg.MaxSandboxes)
		return
	}
	if s.countOf(owner) >= s.cfg.MaxSandboxesPerTeam {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "your team already has %d sandboxes, its limit on this server (hermes sandbox serve --max-sandboxes-per-team): kill one first", s.cfg.MaxSandboxesPerTeam)
		return
	}
	s.sandboxes[sb.id] = sb
	s.mu.Unlock()
	if err := s.boot(r.Context(), sb); err != nil {
		s.kill(sb)
		if noSpace(err) {
			s.writeNoSpace(w, sb, err)
			return
		}
		writeError(w, http.StatusInternalServerError, "start the box of sandbox %s: %v", sb.id, err)
		return
	}
	s.setTimeout(sb, timeout, false)
	if err := s.save(sb, 0); err != nil {
		// Not durable, so not made: a restart would lose it.
		s.kill(sb)
		if noSpace(err) {
			s.writeNoSpace(w, sb, err)
			return
		}
		s.cfg.Log.Error("create a sandbox: the catalog refused it", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the sandbox catalog cannot be written (%v): no sandbox was created; retry later", err)
		return
	}
	s.cfg.Log.Info("sandbox created", "sandbox", sb.id, "template", sb.template)
	writeJSON(w, http.StatusCreated, s.sandboxJSON(sb))
}

// noSpace reports whether err says the node's disk is full: ENOSPC, as
// such or in the text of a box's error (which crosses a process), or
// SQLite's SQLITE_FULL from the catalog in HERMES_HOME.
func noSpace(err error) bool {
	msg := err.Error()
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, syscall.ENOSPC.Error()) ||
		strings.Contains(msg, "database or disk is full")
}

// writeNoSpace answers a create that failed for want of disk space on
// this node: 507 (Insufficient Storage, RFC 4918) in E2B's {code,
// message} shape, naming the node; the host's paths stay in its log.
// The sandbox was killed already: no box and no catalog row is left.
func (s *Server) writeNoSpace(w http.ResponseWriter, sb *sandbox, err error) {
	s.cfg.Log.Error("create a sandbox: the node's disk is full", "sandbox", sb.id, "node", s.cfg.Node, "err", err)
	writeError(w, http.StatusInsufficientStorage, "node %s has no space left on its disk (its HERMES_HOME, where boxes keep their files): "+
		"sandbox %s was not created; free space on that node, or kill paused sandboxes you no longer need", s.cfg.Node, sb.id)
}

// boot starts sb's box and makes the user's home (and HERMES_HOME).
func (s *Server) boot(ctx context.Context, sb *sandbox) error {
	env, err := s.env(ctx, sb)
	if err != nil {
		return err
	}
	if err := env.WriteFile(ctx, UserHome+"/.hermes/.sandbox", []byte(sb.id+"\n"), 0o644); err != nil {
		return err
	}
	set, err := s.imageSetupOf(ctx, sb)
	if err != nil {
		return err
	}
	return s.giveHome(ctx, env, set.user)
}

func (s *Server) templateNames() []string {
	var out []string
	for k := range s.cfg.Templates {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (s *Server) sandboxJSON(sb *sandbox) sandboxJSON {
	return sandboxJSON{TemplateID: sb.template, SandboxID: sb.id, ClientID: "hermes", EnvdVersion: EnvdVersion,
		EnvdAccessToken: sb.token}
}

func (s *Server) detailJSON(sb *sandbox, withToken bool) sandboxDetailJSON {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	d := sandboxDetailJSON{TemplateID: sb.template, SandboxID: sb.id, ClientID: "hermes", StartedAt: sb.startedAt.UTC(),
		EndAt: sb.endAt.UTC(), CPUCount: 1, MemoryMB: 5120, DiskSizeMB: 51200, State: sb.state, EnvdVersion: EnvdVersion,
		Metadata: sb.metadata, AllowInternetAccess: sb.allowInternet, Network: sb.network}
	if withToken {
		d.EnvdAccessToken = sb.token
	}
	return d
}

// getSandbox finds the caller's sandbox named in the path, or answers
// 404: another tenant's sandbox is answered as one that does not exist.
func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) *sandbox {
	sb := s.owned(r.PathValue("id"), tenantOfRequest(r))
	if sb == nil {
		writeError(w, http.StatusNotFound, "sandbox %q not found", r.PathValue("id"))
	}
	return sb
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	if sb := s.getSandbox(w, r); sb != nil {
		writeJSON(w, http.StatusOK, s.detailJSON(sb, true))
	}
}

func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) {
	sb := s.getSandbox(w, r)
	if sb == nil {
		return
	}
	s.kill(sb)
	s.cfg.Log.Info("sandbox killed", "sandbox", sb.id)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleTimeout(w http.ResponseWriter, r *http.Request) {
	sb := s.getSandbox(w, r)
	if sb == nil {
		return
	}
	var req struct {
		Timeout *int `json:"timeout"`
	}
	if err := decodeBody(r, &req); err != nil || req.Timeout == nil || *req.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "body must be {\"timeout\": SECONDS} with SECONDS >= 0")
		return
	}
	s.setTimeout(sb, s.seconds(*req.Timeout), false)
	if err := s.save(sb, 0); err != nil {
		s.cfg.Log.Error("save a sandbox's timeout", "sandbox", sb.id, "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handlePause(w http.ResponseWriter, r *http.Request) {
	sb := s.getSandbox(w, r)
	if sb == nil {
		return
	}
	sb.mu.Lock()
	paused := sb.state == "paused"
	sb.mu.Unlock()
	if paused {
		writeError(w, http.StatusConflict, "sandbox %s is already paused", sb.id)
		return
	}
	if err := s.pause(sb); err != nil {
		writeError(w, http.StatusInternalServerError, "pause sandbox %s: %v", sb.id, err)
		return
	}
	s.cfg.Log.Info("sandbox paused", "sandbox", sb.id)
	w.WriteHeader(http.StatusNoContent)
}

// handleConnect answers connect and resume: a paused sandbox's box starts
// again on its persistent layer (201); a running one only has its timeout
// extended (200).
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	sb := s.getSandbox(w, r)
	if sb == nil {
		return
	}
	var req struct {
		Timeout *int `json:"timeout"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	timeout := 15 * time.Second
	if req.Timeout != nil {
		timeout = s.seconds(*req.Timeout)
	}
	sb.mu.Lock()
	paused := sb.state == "paused"
	sb.mu.Unlock()
	status := http.StatusOK
	if paused && s.shuttingDown() {
		writeError(w, http.StatusServiceUnavailable, errShuttingDown)
		return
	}
	if paused && !s.cfg.Boxes.HasLayer(Task(sb.id)) {
		// Its files were removed on the host (hermes box rm): a fresh box
		// would be an empty sandbox under its id.
		s.kill(sb)
		s.cfg.Log.Warn("sandbox's layer is gone: dropped", "sandbox", sb.id)
		writeError(w, http.StatusNotFound, "sandbox %q no longer exists: its files were removed from this server", sb.id)
		return
	}
	if paused {
		_, err := s.env(r.Context(), sb)
		if errors.Is(err, errKilled) || (err == nil && s.lookup(sb.id) != sb) {
			// Killed while it resumed: the kill won (its box is removed
			// after this start).
			writeError(w, http.StatusNotFound, "sandbox %q not found (it was killed)", sb.id)
			return
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, "resume sandbox %s: %v", sb.id, err)
			return
		}
		sb.mu.Lock()
		sb.state = "running"
		sb.mu.Unlock()
		status = http.StatusCreated
		s.setTimeout(sb, timeout, false)
		s.cfg.Log.Info("sandbox resumed", "sandbox", sb.id)
	} else {
		s.setTimeout(sb, timeout, true)
	}
	if err := s.save(sb, 0); err != nil {
		s.cfg.Log.Error("save a connected sandbox", "sandbox", sb.id, "err", err)
	}
	writeJSON(w, status, s.sandboxJSON(sb))
}

// listQuery is the filter of GET /v2/sandboxes.
type listQuery struct {
	states   []string
	metadata map[string]string
	template string
	after    time.Time
	asc      bool
	limit    int
	next     string
}

func parseListQuery(q url.Values) (listQuery, error) {
	lq := listQuery{limit: 100}
	for _, st := range q["state"] {
		for _, s := range strings.Split(st, ",") {
			if s != "running" && s != "paused" {
				return lq, fmt.Errorf("state %q is not running or paused", s)
			}
			lq.states = append(lq.states, s)
		}
	}
	if m := q.Get("metadata"); m != "" {
		vals, err := url.ParseQuery(m)
		if err != nil {
			return lq, fmt.Errorf("metadata %q is not key=value&...: %v", m, err)
		}
		lq.metadata = map[string]string{}
		for k := range vals {
			lq.metadata[k] = vals.Get(k)
		}
	}
	lq.template = q.Get("template")
	if a := q.Get("startedAfter"); a != "" {
		t, err := time.Parse(time.RFC3339Nano, a)
		if err != nil {
			return lq, fmt.Errorf("startedAfter %q is not an RFC 3339 time", a)
		}
		lq.after = t
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		return lq, fmt.Errorf("order %q is not asc or desc", q.Get("order"))
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return lq, fmt.Errorf("limit %q is not a number from 1 to 100", l)
		}
		lq.limit = n
	}
	lq.next = q.Get("nextToken")
	return lq, nil
}

func (lq listQuery) match(d sandboxDetailJSON) bool {
	if len(lq.states) > 0 && !slices.Contains(lq.states, d.State) {
		return false
	}
	if lq.template != "" && lq.template != d.TemplateID {
		return false
	}
	if !lq.after.IsZero() && d.StartedAt.Before(lq.after) {
		return false
	}
	for k, v := range lq.metadata {
		if d.Metadata[k] != v {
			return false
		}
	}
	return true
}

// filtered lists t's sandboxes matching lq, in its order.
func (s *Server) filtered(ctx context.Context, t tenant, lq listQuery) ([]sandboxDetailJSON, error) {
	var out []sandboxDetailJSON
	all := s.list()
	if s.fleet != nil {
		var err error
		if all, err = s.fleetList(ctx, t); err != nil {
			return nil, err
		}
	}
	for _, sb := range all {
		if sb.tenant != t {
			continue
		}
		if d := s.detailJSON(sb, false); lq.match(d) {
			out = append(out, d)
		}
	}
	if lq.asc {
		slices.Reverse(out)
	}
	return out, nil
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	all, err := s.filtered(r.Context(), tenantOfRequest(r), lq)
	if err != nil {
		s.cfg.Log.Error("list sandboxes from the catalog", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the fleet's catalog cannot be reached to list sandboxes; retry later")
		return
	}
	start := 0
	if lq.next != "" {
		start = len(all)
		for i, d := range all {
			if d.SandboxID == lq.next {
				start = i
				break
			}
		}
	}
	page := append([]sandboxDetailJSON{}, all[start:min(start+lq.limit, len(all))]...)
	if end := start + len(page); end < len(all) {
		w.Header().Set("X-Next-Token", all[end].SandboxID)
	}
	writeJSON(w, http.StatusOK, page)
}

// handleListV1 is GET /sandboxes: the running sandboxes, no paging.
func (s *Server) handleListV1(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(url.Values{"metadata": r.URL.Query()["metadata"]})
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	lq.states = []string{"running"}
	out, err := s.filtered(r.Context(), tenantOfRequest(r), lq)
	if err != nil {
		s.cfg.Log.Error("list sandboxes from the catalog", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the fleet's catalog cannot be reached to list sandboxes; retry later")
		return
	}
	if out == nil {
		out = []sandboxDetailJSON{}
	}
	writeJSON(w, http.StatusOK, out)
}
