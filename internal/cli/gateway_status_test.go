package cli

import (
	"strings"
	"testing"
)

// `hermes gateway status` exits 3 when no gateway runs, as `systemctl
// status` does, so scripts can tell (it exited 0: issue 24).
func TestGatewayStatusExitsThreeWhenStopped(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	code := ta.run("gateway", "status")
	if code != 3 || !strings.Contains(ta.stdout.String(), "Gateway: stopped") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, ta.stdout.String(), ta.stderr.String())
	}
	if ta.stderr.Len() != 0 {
		t.Fatalf("a stopped gateway is not an error: stderr %q", ta.stderr.String())
	}
}
