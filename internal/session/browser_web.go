package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/tool"
	"github.com/hermes-go/hermes/internal/web"
)

// addWebTools adds web_extract and vision_analyze (fetching from the host, or from inside the
// box with the box backend) and, when a search backend is configured,
// web_search. A backend that cannot be used is a warning, not a failure
// to start: the other tools still work.
func (rt *Runtime) addWebTools(all *tool.Registry) {
	var f web.Fetcher = web.NewHTTPFetcher(rt.cfg.Security.AllowPrivateURLs)
	if rt.backend.Kind() == "box" {
		f = &web.EnvFetcher{Open: rt.backend.Open, Explain: browser.GateRefusal}
	}
	all.Add(tool.NewWebExtract(f))
	all.Add(tool.NewVisionAnalyze(tool.VisionOptions{Workspace: rt.cwd, HermesHome: rt.opts.Home, Fetch: f, Model: rt.visionModel}))
	want := rt.cfg.Web.SearchBackend
	if want == "" {
		want = rt.cfg.Web.Backend
	}
	s, err := web.NewSearcher(want, rt.opts.Config.Getenv)
	if err != nil {
		rt.opts.Warn(fmt.Sprintf("warning: %v; web_search is off", err))
		return
	}
	if s != nil {
		all.Add(tool.NewWebSearch(s))
	}
}

// visionModel is the model vision_analyze asks for session id: the
// session's own model when it takes images (model.supports_vision, else
// a guess from its name), else auxiliary.vision when it names a model of
// its own; the error says what to set.
func (rt *Runtime) visionModel(_ context.Context, id string) (tool.VisionModel, error) {
	model := rt.model
	if s := rt.lookup(id); s != nil && s.agent != nil {
		model = s.agent.Model()
	}
	timeout := auxDefaultTimeout(config.AuxVision)
	if n := rt.cfg.Aux(config.AuxVision).Timeout; n > 0 {
		timeout = seconds(n)
	}
	if supportsVision(rt.cfg.Model.SupportsVision, model) {
		return tool.VisionModel{Provider: rt.provider, Model: model, Timeout: timeout}, nil
	}
	a, err := rt.Auxiliary(config.AuxVision)
	if err != nil {
		return tool.VisionModel{}, err
	}
	if a.Main {
		return tool.VisionModel{}, fmt.Errorf("the model %s does not take images; set auxiliary.vision.provider and auxiliary.vision.model to a vision model (or model.supports_vision: true if it does take them)", model)
	}
	return tool.VisionModel{Provider: a.Provider, Model: a.Model, Timeout: a.Timeout}, nil
}

// addBrowserTools adds the browser toolset. With the local backend it
// needs a Chromium on the host; with the box backend Chromium runs inside
// the session's box (found there on first use), behind its egress gate.
// Each session gets its own browser on first use; it closes with the
// session (shutdown) or the runtime.
func (rt *Runtime) addBrowserTools(all *tool.Registry) {
	bc := rt.cfg.Browser
	opts := browser.Options{Workdir: func(string) string { return rt.cwd },
		IdleTimeout: time.Duration(bc.InactivityTimeout) * time.Second, CommandTimeout: time.Duration(bc.CommandTimeout) * time.Second}
	switch rt.backend.Kind() {
	case "local":
		if browser.FindChromium() == "" {
			return
		}
		if !rt.cfg.Security.AllowPrivateURLs {
			opts.DialGuard = web.CheckPublic // the SSRF guard web_extract has
		}
	case "box":
		opts.Workdir = func(id string) string {
			if env, err := rt.backend.Open(context.Background(), id); err == nil {
				return env.Workdir()
			}
			return ""
		}
		opts.Launch = browser.EnvLaunch(rt.backend.Open, browser.BoxChromium)
		opts.Explain = func(ctx context.Context, id, u string) string {
			env, err := rt.backend.Open(ctx, id)
			if err != nil {
				return ""
			}
			return browser.GateRefusal(ctx, env, u)
		}
	default:
		return
	}
	rt.browsers = browser.NewManager(opts)
	rt.closers = append(rt.closers, rt.browsers.Close)
	for _, t := range tool.NewBrowserTools(tool.BrowserOptions{Manager: rt.browsers, Vision: supportsVision(rt.cfg.Model.SupportsVision, rt.cfg.Model.Default)}) {
		all.Add(t)
	}
}

// supportsVision is model.supports_vision, or a guess from the model id
// when unset: the families that take images on their chat endpoints.
func supportsVision(set *bool, model string) bool {
	if set != nil {
		return *set
	}
	m := strings.ToLower(model)
	for _, f := range []string{"claude", "gpt-4o", "gpt-4.1", "gpt-5", "gemini", "vision", "-vl", "llava", "pixtral", "grok-4", "qwen2.5-vl", "llama-4"} {
		if strings.Contains(m, f) {
			return true
		}
	}
	return false
}
