// Package sandboxserver is hermes sandbox serve: an E2B-compatible server
// on hermes boxes, so that code written for the E2B SDKs (Sandbox.create,
// commands.run, files.write, kill) runs against this machine with no cloud
// account. It serves two listeners: the E2B REST API (api.go, shapes from
// E2B's spec/openapi.yml, Apache-2.0) and envd, E2B's in-sandbox daemon
// (envd.go, process.go, filesystem.go; Connect protocol over E2B's own
// process.proto and filesystem.proto, see ./envd). Every request to envd
// names its sandbox in the E2b-Sandbox-Id header, so one envd listener
// serves all boxes.
//
// Each sandbox is a normal hermes box (hermes box ls lists it, as task
// "sbx-<id>"): pause stops the box and keeps its persistent layer, connect
// starts it again on that layer, kill removes it. With a Config.Catalog
// the sandboxes outlive the server: its shutdown pauses them and its next
// start serves them again (durable.go).
package sandboxserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// EnvdVersion is the envd version reported to clients: 0.5.7 is the first
// with octet-stream uploads, which this server accepts (the SDK picks its
// features from this number).
const EnvdVersion = "0.5.7"

// UserHome is the home directory and default working directory of
// commands in a sandbox, as in E2B's templates.
const UserHome = "/home/user"

// TaskPrefix starts the box task id of every sandbox ("sbx-<id>").
const TaskPrefix = "sbx-"

// Boxes is what the server needs of the box backend (box.Manager).
type Boxes interface {
	// Open returns the environment of task, starting its box if needed
	// (on its persistent layer when it was stopped).
	Open(ctx context.Context, task string) (backend.Environment, error)
	// Stop stops the box of task, keeping its persistent layer (pause).
	Stop(task string) error
	// Remove stops the box of task and deletes its state (kill).
	Remove(task string) error
	// HasLayer reports whether the persistent layer of task (its files)
	// exists, so that a stopped box can start on it again.
	HasLayer(task string) bool
}

// Template is a sandbox template: extra read-only layers over the box
// image and environment for its commands.
type Template struct {
	// Image, when set, is the OCI image (registry reference, OCI layout
	// dir or docker save tarball) the template's boxes are made from
	// instead of the server's box image (image.go).
	Image string
	// Layers are host directories laid over the box image (topmost first).
	Layers []string
	// Env is added to the environment of every command.
	Env map[string]string
}

// Config configures a Server.
type Config struct {
	Boxes Boxes
	// Catalog keeps the sandboxes across restarts (durable.go); nil keeps
	// them in memory only (a restart forgets them).
	Catalog sandboxcatalog.Catalog
	// Node names this server in the catalog (default "local").
	Node string
	// APIKeys are the accepted E2B_API_KEY values (X-API-Key header),
	// each a tenant of its own. With no key here or in Teams no key is
	// checked and the server is one tenant (loopback use only; the CLI
	// enforces that).
	APIKeys []string
	// Teams are further accepted keys by team name: the keys of one team
	// share their sandboxes (tenant.go).
	Teams map[string][]string
	// Templates by template id or alias; "base" at least.
	Templates map[string]Template
	// Env is added to every sandbox's commands (after the template's,
	// before the sandbox's envVars), e.g. a provider's base URL.
	Env map[string]string
	// Allow and Deny are the operator's egress rules (terminal.box_network
	// syntax). Deny holds for every sandbox. Allow is opened for sandboxes
	// with internet access (E2B's default) and never for one created with
	// allowInternetAccess: false, which reaches only its own
	// network.allowOut; a client's allowOut may name the loopback,
	// private or host addresses Allow covers.
	Allow, Deny []string
	// NewGate builds an egress gate for a set of rules; nil = boxes have no
	// network at all.
	NewGate func(allow, deny []string) (*egress.Gate, error)
	// InterfaceAddrs lists the host's own addresses, which a sandbox's
	// network.allowOut may not open (net.InterfaceAddrs when nil).
	InterfaceAddrs func() ([]net.Addr, error)
	// MaxSandboxes bounds the sandboxes (running and paused) the server
	// keeps at once, all tenants together (default 100); a create past it
	// is refused with 429.
	MaxSandboxes int
	// MaxSandboxesPerTeam bounds the sandboxes of one tenant (a team, or
	// a key of its own). Default: a fair share of MaxSandboxes, rounded
	// up, among the tenants the keys name (all of it with one tenant), so
	// that one key cannot lock every other out.
	MaxSandboxesPerTeam int
	// MaxUploadBytes bounds the bytes one upload request writes, all its
	// files together, after gzip decoding (default 512 MiB). Downloads
	// stream whatever the size.
	MaxUploadBytes int64
	// MaxTransferBytes is the server-wide budget of bytes in flight in
	// file transfers (default 16 MiB, buffers of 128 KiB: a transfer
	// holds one while it runs, more wait; transfer.go).
	MaxTransferBytes int64
	// MaxQueuedBytes bounds the command output queued for slow stream
	// readers, all streams together (default 1 GiB); a stream that would
	// pass it ends with ResourceExhausted (its command goes on).
	MaxQueuedBytes int64
	// BodyTimeout is how long a request body may take before it has to
	// keep arriving at 64 KiB/s on average (default 30 s).
	BodyTimeout time.Duration
	// MaxTimeout bounds a sandbox's timeout (default 24 h).
	MaxTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// NewID returns a new sandbox id (random when nil).
	NewID func() string
	// UserUID is the host uid (and gid) of the sandbox's default user
	// `user` (0: E2BUserUID). Commands run as it with no user namespace:
	// pick it with ChooseUserUID so no host account or process shares it.
	UserUID int
	// PullImage pulls an OCI image spec into the box's image store unless
	// it is there (Template.Image; nil: images are pulled by the box start).
	PullImage func(ctx context.Context, spec string) error
	// HostAccount names the host account that has uid, if one has: an
	// image's User with such a uid is not taken (image.go). nil: none.
	HostAccount func(uid int) (name string, ok bool)
	// Log receives one line per lifecycle event (nil = discard).
	Log *slog.Logger
}

// Server serves the E2B API and envd over a Boxes.
type Server struct {
	cfg  Config
	user sandboxUser // the default user, uid cfg.UserUID
	keys []acceptedKey

	catMu    sync.Mutex         // orders catalog writes against kills (durable.go)
	warming  sync.WaitGroup     // box starts of restored sandboxes (durable.go)
	warmStop context.CancelFunc // ends them; under mu

	mu        sync.Mutex
	sandboxes map[string]*sandbox
	gates     map[string]*egress.Gate
	closed    bool
	removals  sync.WaitGroup // boxes of killed sandboxes being removed
	queued    *queueBudget   // output queued for slow stream readers
	transfers *transferBudget
	fleet     *fleet // nil on a lone server (fleet.go)
	images    imagePulls
}

// sandbox is one sandbox's record.
type sandbox struct {
	id, template, token string
	// tenant owns the sandbox: only its keys see it (tenant.go).
	tenant        tenant
	metadata      map[string]string
	env           map[string]string
	allow, deny   []string
	internet      bool // the sandbox has the internet (and the operator's allow rules)
	allowInternet *bool
	network       *networkConfig
	autoPause     bool
	startedAt     time.Time

	// life orders box starts (read-locked by env) before the removal of
	// a killed sandbox's box (locked by kill's removal), so that a start
	// racing a kill never makes a box again after its removal.
	life sync.RWMutex

	mu     sync.Mutex
	endAt  time.Time
	state  string // "running" | "paused"
	timer  *time.Timer
	procs  map[uint32]*proc
	paused chan struct{} // closed when the box stops (pause or kill)
	image  *imageSetup   // what the template's image gives, once resolved (image.go)
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Boxes == nil {
		return nil, errors.New("sandboxserver: no box backend")
	}
	if _, ok := cfg.Templates["base"]; !ok {
		if cfg.Templates == nil {
			cfg.Templates = map[string]Template{}
		}
		cfg.Templates["base"] = Template{}
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = 512 << 20
	}
	if cfg.MaxTransferBytes <= 0 {
		cfg.MaxTransferBytes = 16 << 20
	}
	if cfg.MaxSandboxes <= 0 {
		cfg.MaxSandboxes = 100
	}
	if cfg.MaxQueuedBytes <= 0 {
		cfg.MaxQueuedBytes = 1 << 30
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 30 * time.Second
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 24 * time.Hour
	}
	if cfg.InterfaceAddrs == nil {
		cfg.InterfaceAddrs = net.InterfaceAddrs
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.UserUID <= 0 {
		cfg.UserUID = E2BUserUID
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Node == "" {
		cfg.Node = "local"
	}
	s := &Server{cfg: cfg, user: newDefaultUser(cfg.UserUID), sandboxes: map[string]*sandbox{}, gates: map[string]*egress.Gate{}, queued: &queueBudget{max: cfg.MaxQueuedBytes},
		transfers: newTransferBudget(cfg.MaxTransferBytes)}
	s.keys = newAPIKeys(cfg.APIKeys, cfg.Teams)
	seen := map[[32]byte]tenant{}
	for _, k := range s.keys {
		if t, dup := seen[k.sum]; dup && t != k.tenant {
			return nil, errors.New("sandboxserver: one API key is given to two tenants (as a key of its own and in a team, or in two teams): give each key once")
		}
		seen[k.sum] = k.tenant
	}
	if s.cfg.MaxSandboxesPerTeam <= 0 {
		n := tenants(s.keys)
		s.cfg.MaxSandboxesPerTeam = (cfg.MaxSandboxes + n - 1) / n
	}
	return s, nil
}

// randomID is 20 lowercase letters and digits, like E2B's sandbox ids.
func randomID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 20)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// tokenOK compares an envd access token in constant time.
func tokenOK(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1 && got != ""
}

// Task is the box task id of sandbox id.
func Task(id string) string { return TaskPrefix + id }

// Layers returns the template layers of the box of task (box.Options.Layers).
func (s *Server) Layers(task string) []string {
	sb := s.lookup(strings.TrimPrefix(task, TaskPrefix))
	if sb == nil {
		return nil
	}
	return s.cfg.Templates[sb.template].Layers
}

// NewEgress returns the egress session of the box of task, from the gate
// of its sandbox's network rules (box.Options.NewEgress).
func (s *Server) NewEgress(task string) (*egress.BoxSession, error) {
	if s.cfg.NewGate == nil {
		return nil, nil
	}
	sb := s.lookup(strings.TrimPrefix(task, TaskPrefix))
	// E2B's rule: a sandbox without internet reaches nothing but its own
	// network.allowOut. The operator's allow rules are part of the
	// internet this server gives, so only sandboxes that have it get them;
	// the operator's deny rules hold for every sandbox.
	var allow []string
	deny := append([]string{}, s.cfg.Deny...)
	if sb != nil {
		if sb.internet {
			allow = append(allow, s.cfg.Allow...)
		}
		allow, deny = append(allow, sb.allow...), append(deny, sb.deny...)
	}
	key := strings.Join(allow, "\x00") + "\x01" + strings.Join(deny, "\x00")
	s.mu.Lock()
	g := s.gates[key]
	s.mu.Unlock()
	if g == nil {
		var err error
		if g, err = s.cfg.NewGate(allow, deny); err != nil {
			return nil, err
		}
		s.mu.Lock()
		if old := s.gates[key]; old != nil {
			g = old
		} else {
			s.gates[key] = g
		}
		s.mu.Unlock()
	}
	return g.NewBox(task)
}

func (s *Server) lookup(id string) *sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sandboxes[id]
}

// list returns the sandboxes, newest first.
// Running is how many sandboxes run on this node (not paused): what
// Shutdown pauses.
func (s *Server) Running() int {
	n := 0
	for _, sb := range s.list() {
		sb.mu.Lock()
		if sb.state == "running" {
			n++
		}
		sb.mu.Unlock()
	}
	return n
}

func (s *Server) list() []*sandbox {
	s.mu.Lock()
	out := make([]*sandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		out = append(out, sb)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].startedAt.Equal(out[j].startedAt) {
			return out[i].startedAt.After(out[j].startedAt)
		}
		return out[i].id < out[j].id
	})
	return out
}

// errKilled is env's error for a sandbox killed before its box started.
var errKilled = errors.New("the sandbox was killed")

// env returns the running environment of sb, starting its box if needed;
// errKilled once sb is killed (a box is never started again for it).
func (s *Server) env(ctx context.Context, sb *sandbox) (backend.Environment, error) {
	sb.life.RLock()
	defer sb.life.RUnlock()
	if s.lookup(sb.id) != sb {
		return nil, fmt.Errorf("sandbox %s: %w", sb.id, errKilled)
	}
	return s.cfg.Boxes.Open(ctx, Task(sb.id))
}

// setTimeout makes sb expire d from now (killed, or paused with autoPause).
// With extendOnly, an earlier expiry than the current one is ignored.
func (s *Server) setTimeout(sb *sandbox, d time.Duration, extendOnly bool) {
	d = min(max(d, 0), s.cfg.MaxTimeout)
	end := s.cfg.Now().Add(d)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if extendOnly && end.Before(sb.endAt) {
		return
	}
	sb.endAt = end
	if sb.timer != nil {
		sb.timer.Stop()
	}
	sb.timer = time.AfterFunc(d, func() { s.expire(sb, end) })
}

// expire ends sb when its timeout passes (unless it was moved since).
func (s *Server) expire(sb *sandbox, end time.Time) {
	sb.mu.Lock()
	stale := !sb.endAt.Equal(end) || sb.state != "running"
	sb.mu.Unlock()
	if stale || s.shuttingDown() { // Shutdown pauses it, keeping the time it has left
		return
	}
	if sb.autoPause {
		s.cfg.Log.Info("sandbox timeout: pausing", "sandbox", sb.id)
		if err := s.pause(sb); err != nil {
			s.cfg.Log.Error("pause a sandbox at its timeout", "sandbox", sb.id, "err", err)
		}
		return
	}
	s.cfg.Log.Info("sandbox timeout: killing", "sandbox", sb.id)
	s.kill(sb)
}

// stopProcs marks sb's box stopped: running commands' streams end.
func (sb *sandbox) stopProcs() {
	sb.mu.Lock()
	if sb.timer != nil {
		sb.timer.Stop()
	}
	close(sb.paused)
	sb.paused = make(chan struct{})
	sb.procs = map[uint32]*proc{}
	sb.mu.Unlock()
}

// pause stops sb's box, keeps its layer and records it paused.
func (s *Server) pause(sb *sandbox) error {
	sb.mu.Lock()
	if sb.state == "paused" {
		sb.mu.Unlock()
		return nil
	}
	sb.state = "paused"
	sb.mu.Unlock()
	sb.stopProcs()
	if err := s.cfg.Boxes.Stop(Task(sb.id)); err != nil {
		return err
	}
	return s.save(sb, 0)
}

// kill removes sb at once and its box in the background (stopping a box
// and releasing its layer takes longer than the client needs to wait;
// Close waits for every removal).
func (s *Server) kill(sb *sandbox) {
	s.mu.Lock()
	if s.sandboxes[sb.id] != sb { // killed already (a timeout racing Close or DELETE)
		s.mu.Unlock()
		return
	}
	delete(s.sandboxes, sb.id)
	// Added under s.mu, which Close's listing also takes: Close's Wait
	// never races an Add.
	s.removals.Add(1)
	s.mu.Unlock()
	sb.stopProcs()
	// Out of the catalog before the answer: a restart never brings a
	// killed sandbox back. (A failed delete leaves a record whose layer
	// is gone, which the next start reports and drops.)
	s.forget(sb.id)
	go func() {
		defer s.removals.Done()
		// After every box start under way (env): none starts after this.
		sb.life.Lock()
		defer sb.life.Unlock()
		// A concurrent reader of the box's state (hermes box ls) can make
		// one removal fail; the next one finishes it.
		var err error
		for try := range 5 {
			if err = s.cfg.Boxes.Remove(Task(sb.id)); err == nil || errors.Is(err, errNotExist) {
				return
			}
			time.Sleep(time.Duration(try+1) * 100 * time.Millisecond)
		}
		s.cfg.Log.Error("remove the box of a killed sandbox", "sandbox", sb.id, "err", err)
	}()
}

// Close is Shutdown without a bound: it deletes no sandbox.
func (s *Server) Close() error { return s.Shutdown(context.Background()) }
