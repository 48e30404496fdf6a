package doctor

import (
	"context"
	"strings"

	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/web"
)

// checkWeb: which web_search backend is used, or how to enable one, and
// whether a Chromium is there for the browser tools (local backend; in a
// box with the host image the same binary is used).
func checkWeb(_ context.Context, e *Env) []Result {
	if e.Config == nil {
		return nil
	}
	c := &e.Config.Config
	want := c.Web.SearchBackend
	if want == "" {
		want = c.Web.Backend
	}
	var out []Result
	// The hint names ~/.hermes/.env; doctor knows the real HERMES_HOME.
	hint := strings.Replace(web.EnableHint, "~/.hermes/.env", config.DotEnvPath(e.Home), 1)
	s, err := web.NewSearcher(want, e.Config.Getenv)
	switch {
	case err != nil:
		out = append(out, Result{Status: Warn, Name: "web_search", Detail: err.Error(), Fix: hint})
	case s == nil:
		out = append(out, Result{Status: Warn, Name: "web_search", Detail: "no search backend is configured, so web_search is not offered",
			Fix: hint})
	default:
		out = append(out, Result{Status: OK, Name: "web_search", Detail: "backend " + s.Name})
	}
	if p := browser.FindChromium(); p != "" {
		out = append(out, Result{Status: OK, Name: "browser", Detail: "Chromium at " + p})
	} else {
		out = append(out, Result{Status: Warn, Name: "browser", Detail: "no Chromium on PATH, so the browser tools are not offered",
			Fix: "install it (Debian: apt-get install chromium)"})
	}
	return out
}
