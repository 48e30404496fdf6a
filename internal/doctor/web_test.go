package doctor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

// With no search backend configured doctor says web_search is off and how
// to turn it on; with SEARXNG_URL set it names the backend.
func TestWebSearchCheckSaysHowToEnable(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		env    map[string]string
		status Status
		want   string
	}{
		{nil, Warn, "SEARXNG_URL"},
		{nil, Warn, "in " + config.DotEnvPath(home)}, // the real HERMES_HOME, not ~/.hermes
		{map[string]string{"SEARXNG_URL": "http://127.0.0.1:8888"}, OK, "backend searxng"},
	} {
		l, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string { return tc.env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		r := Run(context.Background(), &Env{Home: home, Config: l, Offline: true}, []Check{{"web", checkWeb}})
		got := find(t, r, "web_search")
		if got.Status != tc.status || !strings.Contains(got.Detail+got.Fix, tc.want) {
			t.Errorf("env %v: %+v, want status %v mentioning %q", tc.env, got, tc.status, tc.want)
		}
		// The fix names this HERMES_HOME's .env, not ~/.hermes/.env.
		if tc.status == Warn && !strings.Contains(got.Fix, filepath.Join(home, ".env")) {
			t.Errorf("fix %q does not name %s", got.Fix, filepath.Join(home, ".env"))
		}
	}
}
