package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cancellation cause of the context from SignalContext:
// the signal the process received.
type SignalError struct{ Signal syscall.Signal }

func (e SignalError) Error() string { return "received " + e.Signal.String() }

// SignalContext returns a context cancelled, with a SignalError cause, on
// the first SIGINT or SIGTERM; a second signal gets the default action
// (the process ends at once). stop releases the signal handler.
func SignalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			if ss, ok := s.(syscall.Signal); ok {
				cancel(SignalError{Signal: ss})
			} else {
				cancel(context.Canceled)
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
