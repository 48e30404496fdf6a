package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// Durable sandboxes (issue 29): every change of a sandbox's lifecycle is
// written to Config.Catalog before it is answered, so that the server can
// stop (Shutdown) and start again (Restore) without losing one.
//
//   - Shutdown refuses creates and connects (503), pauses every running
//     sandbox (its box stops, its layer stays) and records it to run again
//     with the timeout it had left. It never deletes a sandbox.
//   - Restore reads the catalog back: paused sandboxes are paused again
//     (connect resumes them with their files); those the shutdown paused
//     run again, their timers resuming with the time they had left (their
//     boxes start in the background, or at their first request); a
//     record whose layer is gone is reported and dropped.
//   - After a crash (kill -9) the catalog still says "running" for the
//     sandboxes that ran: their boxes died with the server, their layers
//     did not. Restore runs them again with the time left until their
//     recorded end; one whose end passed while the server was down gets
//     its timeout's due (paused with autoPause, else killed).
//
// A sandbox that no longer exists is answered 404, never replaced by a
// fresh one.

// restoreWorkers bounds the boxes started at once after a restart.
const restoreWorkers = 4

// record is sb as the catalog keeps it. remaining > 0 marks a sandbox
// the shutdown paused, to run again with that much timeout.
func (s *Server) record(sb *sandbox, remaining time.Duration) sandboxcatalog.Record {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	r := sandboxcatalog.Record{ID: sb.id, Task: Task(sb.id), Node: s.cfg.Node, Tenant: string(sb.tenant), Template: sb.template,
		State: sb.state, Resume: remaining > 0, Remaining: remaining, AutoPause: sb.autoPause, StartedAt: sb.startedAt,
		EndAt: sb.endAt, Token: sb.token, Metadata: sb.metadata, Env: sb.env, AllowInternet: sb.allowInternet}
	if sb.network != nil {
		r.Network = &sandboxcatalog.Network{AllowOut: sb.network.AllowOut, DenyOut: sb.network.DenyOut}
	}
	return r
}

// save writes sb to the catalog (see record for remaining), unless it
// was killed meanwhile: under catMu, which forget takes too, a save that
// raced a kill never writes the killed sandbox back.
func (s *Server) save(sb *sandbox, remaining time.Duration) error {
	if s.cfg.Catalog == nil {
		return nil
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.lookup(sb.id) != sb {
		return nil
	}
	return s.cfg.Catalog.Put(context.Background(), s.record(sb, remaining))
}

// forget drops sandbox id from the catalog (after it left s.sandboxes);
// a failure is logged.
func (s *Server) forget(id string) {
	if s.cfg.Catalog == nil {
		return
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if err := s.cfg.Catalog.Delete(context.Background(), id); err != nil {
		s.cfg.Log.Error("drop a sandbox from the catalog", "sandbox", id, "err", err)
	}
}

// fromRecord is the in-memory sandbox of r, paused (Restore runs it).
func (s *Server) fromRecord(r sandboxcatalog.Record) *sandbox {
	var network *networkConfig
	if r.Network != nil {
		network = &networkConfig{AllowOut: r.Network.AllowOut, DenyOut: r.Network.DenyOut}
	}
	allow, deny, internet := egressRules(r.AllowInternet, network)
	return &sandbox{id: r.ID, tenant: tenant(r.Tenant), template: r.Template, token: r.Token, metadata: r.Metadata,
		env: maps.Clone(r.Env), allow: allow, deny: deny, internet: internet, allowInternet: r.AllowInternet, network: network,
		autoPause: r.AutoPause, startedAt: r.StartedAt, endAt: r.EndAt, state: "paused", procs: map[uint32]*proc{},
		paused: make(chan struct{})}
}

// Known reports whether box task is the box of a sandbox this server
// keeps (hermes sandbox serve removes the other sbx- boxes at start).
func (s *Server) Known(task string) bool {
	id, ok := strings.CutPrefix(task, TaskPrefix)
	return ok && s.lookup(id) != nil
}

// RestoreReport counts what Restore found.
type RestoreReport struct {
	// Running run again (their boxes start in the background, or at
	// their first request); Paused stay paused; Gone had lost
	// their layer and were dropped; Expired passed their timeout while
	// the server was down (after a crash) and got its due.
	Running, Paused, Gone, Expired int
}

func (r RestoreReport) String() string {
	return fmt.Sprintf("%d running, %d paused, %d gone (layer missing), %d expired while down", r.Running, r.Paused, r.Gone, r.Expired)
}

// Restore reads this node's sandboxes back from the catalog (call it
// once, after New and before serving) and returns without waiting for
// boxes: those of running sandboxes start in the background (warm).
// Errors are the catalog's.
func (s *Server) Restore(ctx context.Context) (RestoreReport, error) {
	var rep RestoreReport
	if s.cfg.Catalog == nil {
		return rep, nil
	}
	recs, err := s.cfg.Catalog.List(ctx, s.cfg.Node)
	if err != nil {
		return rep, err
	}
	type toRun struct {
		sb   *sandbox
		left time.Duration
	}
	var run []toRun
	for _, r := range recs {
		if !s.cfg.Boxes.HasLayer(r.Task) {
			s.cfg.Log.Warn("sandbox's layer is gone: dropped from the catalog (a client connecting gets 404)",
				"sandbox", r.ID, "template", r.Template, "state", r.State)
			s.forget(r.ID)
			rep.Gone++
			continue
		}
		sb := s.fromRecord(r)
		s.mu.Lock()
		s.sandboxes[sb.id] = sb
		s.mu.Unlock()
		left := r.Remaining
		if !r.Resume {
			left = r.EndAt.Sub(s.cfg.Now())
		}
		switch {
		case r.State == sandboxcatalog.StatePaused && !r.Resume:
			rep.Paused++
		case left <= 0: // crashed while it ran, and its timeout passed since
			rep.Expired++
			s.expireRestored(sb)
		default:
			run = append(run, toRun{sb, left})
		}
	}
	var warm []*sandbox
	for _, w := range run {
		w.sb.mu.Lock()
		w.sb.state = "running"
		w.sb.mu.Unlock()
		s.setTimeout(w.sb, w.left, false)
		if err := s.save(w.sb, 0); err != nil {
			s.cfg.Log.Error("save a sandbox", "sandbox", w.sb.id, "err", err)
		}
		warm = append(warm, w.sb)
		rep.Running++
	}
	s.warm(warm)
	return rep, nil
}

// warm starts the boxes of restored running sandboxes in the background,
// restoreWorkers at a time, so that the server serves at once: a request
// that comes first starts its sandbox's box itself (the box backend starts
// a box once). A sandbox whose box does not start is paused (connect
// retries). Shutdown stops the warming first.
func (s *Server) warm(sbs []*sandbox) {
	if len(sbs) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.warmStop = cancel
	s.mu.Unlock()
	work := make(chan *sandbox, len(sbs))
	for _, sb := range sbs {
		work <- sb
	}
	close(work)
	start := s.cfg.Now()
	var started sync.WaitGroup
	for range min(restoreWorkers, len(sbs)) {
		s.warming.Add(1)
		started.Add(1)
		go func() {
			defer s.warming.Done()
			defer started.Done()
			for sb := range work {
				if ctx.Err() != nil {
					return
				}
				if sb.currentState() != "running" { // paused or killed by a client meanwhile
					continue
				}
				if _, err := s.env(ctx, sb); err != nil && ctx.Err() == nil && !errors.Is(err, errKilled) && sb.currentState() == "running" {
					s.cfg.Log.Error("start a restored sandbox's box: paused (connect retries)", "sandbox", sb.id, "err", err)
					if err := s.pause(sb); err != nil {
						s.cfg.Log.Error("pause a sandbox", "sandbox", sb.id, "err", err)
					}
				}
			}
		}()
	}
	go func() {
		started.Wait()
		if ctx.Err() == nil {
			s.cfg.Log.Info("the boxes of the restored running sandboxes run again", "sandboxes", len(sbs),
				"took", s.cfg.Now().Sub(start).Round(time.Millisecond).String())
		}
	}()
}

// expireRestored gives a restored sandbox whose timeout passed while the
// server was down its due: paused with autoPause, else killed.
func (s *Server) expireRestored(sb *sandbox) {
	if sb.autoPause {
		s.cfg.Log.Info("sandbox timeout passed while the server was down: paused", "sandbox", sb.id)
		if err := s.save(sb, 0); err != nil {
			s.cfg.Log.Error("save a sandbox", "sandbox", sb.id, "err", err)
		}
		return
	}
	s.cfg.Log.Info("sandbox timeout passed while the server was down: killed", "sandbox", sb.id)
	s.kill(sb)
}

// Drain refuses creates and connects from now on (503, E2B's error shape),
// so that nothing starts while the server stops.
func (s *Server) Drain() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown drains the server and pauses every running sandbox, at most
// restoreWorkers*4 boxes stopping at once: each box stops, its layer is
// kept, and its record says to run it again at the next start with the
// timeout it had left (Restore). It deletes nothing. It returns when every
// sandbox is paused and recorded and the boxes of sandboxes killed before
// are removed, or when ctx ends (ctx's error; the
// boxes still stopping are then stopped by the box backend's Close, and
// their records still say "running", which Restore handles as after a
// crash). The error of a failed pause or catalog write is returned too.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	s.mu.Lock()
	if s.warmStop != nil {
		s.warmStop()
	}
	s.mu.Unlock()
	errs := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		s.warming.Wait() // a box start under way ends first (it holds no request)
		var wg sync.WaitGroup
		slots := make(chan struct{}, restoreWorkers*4)
		for _, sb := range s.list() {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if err := s.pauseForShutdown(sb); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
		wg.Wait()
		s.removals.Wait() // boxes of sandboxes killed just before
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// pauseForShutdown pauses sb if it runs, recording the timeout it has
// left so that the next start runs it again.
func (s *Server) pauseForShutdown(sb *sandbox) error {
	sb.mu.Lock()
	if sb.state != "running" {
		sb.mu.Unlock()
		return nil
	}
	sb.state = "paused"
	left := max(sb.endAt.Sub(s.cfg.Now()), time.Millisecond)
	sb.mu.Unlock()
	sb.stopProcs()
	if err := s.cfg.Boxes.Stop(Task(sb.id)); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", sb.id, err)
	}
	if err := s.save(sb, left); err != nil {
		return err
	}
	s.cfg.Log.Info("sandbox paused for the shutdown", "sandbox", sb.id, "timeout_left", left.Round(time.Second).String())
	return nil
}
