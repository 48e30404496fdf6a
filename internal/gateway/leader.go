package gateway

import (
	"context"
	"errors"
	"time"
)

// Lease elects the one replica that may consume a chat platform that
// allows one consumer per bot (Telegram long polling) when several hermes
// processes share a database. internal/store/postgres's *Lease is the
// implementation: a row with a holder and an expiry on the database's
// clock, plus a cursor (the update offset) only a valid holder advances.
type Lease interface {
	// Acquire takes the lease if it is free, expired or already ours and
	// returns the cursor; held is false while another holder's is valid.
	Acquire(ctx context.Context) (cursor int64, held bool, err error)
	// Renew extends our lease by TTL; false means it was lost.
	Renew(ctx context.Context) (bool, error)
	// Advance stores the cursor while our lease is valid; false = lost.
	Advance(ctx context.Context, cursor int64) (bool, error)
	// Release ends our lease at once (a stopping replica hands over).
	Release(ctx context.Context) error
	// TTL is how long the lease lasts after Acquire or Renew.
	TTL() time.Duration
}

// leader runs work whenever this replica holds a lease, and stops it
// before the lease can expire unrenewed, so two replicas never work at
// once: work's context ends at start+TTL-TTL/5 (start taken before the
// request that took or renewed the lease, the database's expiry comes
// later) unless a renewal succeeded by then, and at once when a renewal
// reports the lease lost. A standby tries to take the lease every TTL/4,
// so a dead holder is replaced within 1.25 × TTL.
type leader struct {
	lease Lease
	what  string // "Telegram long polling", for warnings
	warn  func(string)
	now   func() time.Time
}

// errLeaseLost ends work when the lease was lost or expired unrenewed.
var errLeaseLost = errors.New("leader lease lost")

// run takes the lease whenever it can and calls work(ctx, cursor) while
// it holds it, until ctx ends (then it releases the lease) or work
// returns an error other than the lease's loss (returned).
func (l *leader) run(ctx context.Context, work func(ctx context.Context, cursor int64) error) error {
	ttl := l.lease.TTL()
	standby, leading := false, false
	for ctx.Err() == nil {
		start := l.now()
		cursor, held, err := l.lease.Acquire(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			l.warn(l.what + ": " + err.Error() + " (retrying)")
		case err == nil && held:
			if standby || !leading {
				l.warn(l.what + ": this replica is the leader now")
			}
			standby, leading = false, true
			werr := l.lead(ctx, start, cursor, work)
			if werr != nil && !errors.Is(werr, errLeaseLost) && ctx.Err() == nil {
				l.release()
				return werr
			}
			if ctx.Err() == nil {
				l.warn(l.what + ": " + errLeaseLost.Error() + "; standing by")
				leading = false
			}
			continue
		case err == nil && !standby:
			l.warn(l.what + ": another replica is the leader; standing by")
			standby = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(ttl / 4):
		}
	}
	if leading {
		l.release()
	}
	return nil
}

func (l *leader) release() {
	ctx, cancel := context.WithTimeout(context.Background(), l.lease.TTL())
	defer cancel()
	_ = l.lease.Release(ctx)
}

// lead runs work under a heartbeat that renews the lease every TTL/3.
func (l *leader) lead(ctx context.Context, start time.Time, cursor int64,
	work func(ctx context.Context, cursor int64) error) error {
	ttl := l.lease.TTL()
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		l.heartbeat(wctx, cancel, start.Add(ttl-ttl/5))
	}()
	err := work(wctx, cursor)
	cancel(nil)
	<-beat
	if cause := context.Cause(wctx); errors.Is(cause, errLeaseLost) {
		return errLeaseLost
	}
	return err
}

// heartbeat renews the lease until ctx ends, cancelling it with
// errLeaseLost when a renewal says the lease is gone or valid passes
// without one succeeding.
func (l *leader) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, valid time.Time) {
	ttl := l.lease.TTL()
	every := time.NewTicker(ttl / 3)
	defer every.Stop()
	for {
		expire := time.NewTimer(valid.Sub(l.now()))
		select {
		case <-ctx.Done():
			expire.Stop()
			return
		case <-expire.C:
			cancel(errLeaseLost)
			return
		case <-every.C:
			expire.Stop()
		}
		start := l.now()
		rctx, done := context.WithDeadline(ctx, valid)
		ok, err := l.lease.Renew(rctx)
		done()
		switch {
		case err == nil && ok:
			valid = start.Add(ttl - ttl/5)
		case err == nil:
			cancel(errLeaseLost)
			return
		case ctx.Err() == nil:
			l.warn(l.what + ": renewing the leader lease: " + err.Error())
		}
	}
}
