package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
)

// startCronTicker runs the cron jobs of HERMES_HOME through rt (sessions
// of source cron) every minute until stop is called; wait then waits,
// bounded by its context, for the runs in progress.
// HERMES_CRON_TICKER=false turns the ticker off (another process ticks).
func (a *App) startCronTicker(ctx context.Context, cfg *config.Loaded, rt *session.Runtime, platforms []platform) (stop func(), wait func(context.Context)) {
	if v := cfg.Getenv("HERMES_CRON_TICKER"); v != "" && !truthy(v) {
		return func() {}, func(context.Context) {}
	}
	s := a.cronScheduler(cfg, rt.RunCron)
	// In the gateway, deliveries go through the running chat platforms
	// (their retries and undelivered-reply queue), not a second client.
	live := cron.Deliverers{}
	if standalone, ok := s.Deliver.(cron.Deliverers); ok {
		for name, d := range standalone {
			live[name] = d
		}
	}
	for _, p := range platforms {
		if p.chat != nil {
			live[strings.ToLower(p.name)] = chatDeliverer{p.chat}
		}
	}
	s.Deliver = live
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Loop(tctx, a.cronClock(), cron.TickInterval)
	}()
	fmt.Fprintln(a.Stderr, "hermes: cron ticker started (jobs in "+s.Store.Dir()+")")
	return cancel, func(dctx context.Context) {
		select {
		case <-done:
		case <-dctx.Done():
		}
	}
}

// chatDeliverer delivers cron output through a running chat platform.
type chatDeliverer struct{ chat *gateway.Chat }

// Deliver implements cron.Deliverer.
func (d chatDeliverer) Deliver(ctx context.Context, _, chatID, threadID, text string) error {
	return d.chat.DeliverTo(ctx, chatID, threadID, text)
}

// cronClock is the ticker's clock: the app's Now with real timers.
func (a *App) cronClock() cron.Clock { return appClock{a} }

type appClock struct{ a *App }

func (c appClock) Now() time.Time                       { return c.a.Now() }
func (appClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
