package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
)

// startCronTicker runs the cron jobs of HERMES_HOME through rt (sessions
// of source cron) every minute until stop is called; wait then waits,
// bounded by its context, for the runs in progress.
// HERMES_CRON_TICKER=false turns the ticker off (another process ticks).
func (a *App) startCronTicker(ctx context.Context, cfg *config.Loaded, rt *session.Runtime, live cron.Deliverer) (stop func(), wait func(context.Context)) {
	if v := cfg.Getenv("HERMES_CRON_TICKER"); v != "" && !truthy(v) {
		return func() {}, func(context.Context) {}
	}
	s := a.cronScheduler(cfg, database.CronJobs(rt.Store(), a.Home(), a.Now), rt.RunCron)
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

// gatewayRouter is the deliverer of a gateway's cron output and
// send_message: the bot-token deliverers of cronDeliverer until the chat
// platforms run, then the running platforms (routePlatforms), so a
// delivery goes through their retries and undelivered-reply queue, not
// a second client.
func (a *App) gatewayRouter(cfg *config.Loaded) *cron.Router {
	standalone, _ := a.cronDeliverer(cfg).(cron.Deliverers)
	return cron.NewRouter(standalone)
}

// routePlatforms routes r's deliveries to the running chat platforms.
func routePlatforms(r *cron.Router, platforms []platform) {
	for _, p := range platforms {
		if p.chat != nil {
			r.Set(strings.ToLower(p.name), gateway.ChatDeliverer{Chat: p.chat})
		}
	}
}

// cronClock is the ticker's clock: the app's Now with real timers.
func (a *App) cronClock() cron.Clock { return appClock{a} }

type appClock struct{ a *App }

func (c appClock) Now() time.Time                       { return c.a.Now() }
func (appClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
