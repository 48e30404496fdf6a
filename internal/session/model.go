package session

import (
	"errors"
	"io"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/providers"
)

// ErrBusy is returned by changes that need an idle session while a turn
// runs or is queued.
var ErrBusy = errors.New("a turn is running in this session; wait for it or cancel it first")

// Model names the model the session's next turn uses.
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != "" {
		return s.model
	}
	return s.rt.model
}

// SetModel switches the session's next turns to model on provider
// ("" = the runtime's provider, "provider:model" in model is split the way
// `hermes model` writes it). Other sessions keep theirs. It fails with
// ErrBusy while a turn runs, and with the provider's error (unknown
// provider, missing key) without changing anything.
func (s *Session) SetModel(provider, model string) error {
	if provider == "" {
		if p, m, ok := strings.Cut(model, ":"); ok && isProvider(p) {
			provider, model = p, m
		}
	}
	model = strings.TrimSpace(model)
	if model == "" {
		return errors.New("model name is empty: use MODEL or PROVIDER:MODEL")
	}
	rt := s.rt
	var (
		p     llm.Provider
		close func() error
	)
	if rt.opts.Provider != nil || (model == rt.model && (provider == "" || provider == rt.provName)) {
		p = rt.provider // an injected provider serves any model name
	} else {
		o := rt.popts
		o.Model = model
		if provider != "" {
			o.Provider = provider
		}
		var err error
		if p, err = providers.New(o); err != nil {
			return err
		}
		if cl, ok := p.(io.Closer); ok {
			close = cl.Close
		}
	}
	s.mu.Lock()
	if s.running != nil || len(s.queue) > 0 {
		s.mu.Unlock()
		if close != nil {
			_ = close()
		}
		return ErrBusy
	}
	old := s.closeProvider
	s.agent = s.newAgent(p, model)
	s.model, s.closeProvider = model, close
	s.mu.Unlock()
	if old != nil {
		_ = old()
	}
	return nil
}

func isProvider(name string) bool {
	for _, n := range providers.Names() {
		if n == strings.ToLower(name) {
			return true
		}
	}
	return false
}
