package session

import (
	"fmt"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/providers"
)

// auxDefaultTimeout bounds one call of an auxiliary task when its timeout
// key is unset (Hermes: vision and compression 120 s; a title 30 s).
func auxDefaultTimeout(task config.AuxTask) time.Duration {
	if task == config.AuxTitle {
		return 30 * time.Second
	}
	return 120 * time.Second
}

// Auxiliary returns the model of an auxiliary task (config.yaml
// auxiliary.<task>: config.AuxTitle, AuxCompression, AuxVision): the main
// provider and model unless the task names its own provider, model or
// endpoint (providers.ResolveAux). The result is built once per task and
// shared by the runtime's sessions; Aux.Timeout is the task's per-call
// bound, for the caller's context. Errors name the key to fix; the first
// one is also told through Options.Warn, and kept (one warning per run).
func (rt *Runtime) Auxiliary(task config.AuxTask) (providers.Aux, error) {
	rt.auxMu.Lock()
	defer rt.auxMu.Unlock()
	if a, ok := rt.aux[task]; ok {
		return a, nil
	}
	if err := rt.auxErr[task]; err != nil {
		return providers.Aux{}, err // told once already: not again per session
	}
	m := rt.cfg.Aux(task)
	main := rt.popts
	main.Provider, main.Model = rt.provName, rt.model
	a, err := providers.ResolveAux(main, rt.provider, providers.AuxSettings{
		Provider: m.Provider, Model: m.Model, BaseURL: m.BaseURL, APIKey: m.APIKey, Timeout: seconds(m.Timeout),
	}, auxDefaultTimeout(task))
	if err != nil {
		err = fmt.Errorf("auxiliary.%s: %w", task, err)
		if rt.auxErr == nil {
			rt.auxErr = map[config.AuxTask]error{}
		}
		rt.auxErr[task] = err
		rt.opts.Warn(fmt.Sprintf("warning: %v (see hermes config check); titles and compression summaries use the main model (%s)", err, rt.model))
		return providers.Aux{}, err
	}
	if rt.aux == nil {
		rt.aux = map[config.AuxTask]providers.Aux{}
	}
	rt.aux[task] = a
	return a, nil
}

// auxOrMain is Auxiliary(task), or the main model when the task's
// settings do not resolve (Auxiliary told the person once; `hermes config
// check` names the key too).
func (rt *Runtime) auxOrMain(task config.AuxTask) providers.Aux {
	a, err := rt.Auxiliary(task)
	if err == nil {
		return a
	}
	a = providers.Aux{Provider: rt.provider, Model: rt.model, Name: rt.provName, Main: true, Timeout: auxDefaultTimeout(task)}
	rt.auxMu.Lock()
	if rt.aux == nil {
		rt.aux = map[config.AuxTask]providers.Aux{}
	}
	rt.aux[task] = a
	rt.auxMu.Unlock()
	return a
}
