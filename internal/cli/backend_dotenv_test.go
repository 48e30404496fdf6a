package cli

import (
	"testing"
)

// Hosted backends read their credentials from HERMES_HOME/.env as well as
// the environment: `hermes config set VERCEL_OIDC_TOKEN ...` (which writes
// .env) or E2B_API_KEY there is enough to build the backend.
func TestHostedBackendCredentialsFromDotEnv(t *testing.T) {
	for _, c := range []struct{ backend, key, value string }{
		{"vercel_sandbox", "VERCEL_OIDC_TOKEN", "a.b.c"},
		{"e2b", "E2B_API_KEY", "e2b_0123456789"},
	} {
		ta := newTestApp(t, nil, "", false) // nothing in the process environment
		for _, kv := range [][2]string{{"terminal.backend", c.backend}, {"terminal.container_memory", "2048"}, {c.key, c.value}} {
			if code := ta.run("config", "set", kv[0], kv[1]); code != 0 {
				t.Fatal(ta.stderr)
			}
		}
		b, err := ta.newTerminalBackend(loadTestConfig(t, ta), t.TempDir())
		if err != nil {
			t.Errorf("%s with %s in .env: %v", c.backend, c.key, err)
			continue
		}
		_ = b.Close()
	}
}
