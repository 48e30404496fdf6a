package box

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// ExecRequest.RunAs runs a command as another uid and gid (E2B's `user`,
// issue 25), with no supplementary groups; without it commands run as
// root. Chown gives that user a directory the init made.
func TestRunAsAndChown(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.SwitchUsers = true })
	ctx := waitfor.Context(t)
	run := func(cmd string, as *backend.Account) string {
		t.Helper()
		res, err := e.env.Exec(ctx, backend.ExecRequest{Command: cmd, RunAs: as, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Output)
	}
	user := &backend.Account{UID: 1000, GID: 1000}
	if got := run("echo $(id -u) $(id -g) $(id -G)", user); got != "1000 1000 1000\n" {
		t.Errorf("as uid 1000: %q", got)
	}
	// Root stays without capabilities: it cannot give files away.
	if got := run("id -u; touch /tmp/r; chown 1000 /tmp/r 2>/dev/null || echo refused", nil); got != "0\nrefused\n" {
		t.Errorf("default: %q", got)
	}
	for _, as := range []*backend.Account{user, nil} {
		if got := run("grep -E '^Cap(Eff|Prm|Inh)' /proc/self/status", as); got != "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" {
			t.Errorf("a command as %v has capabilities (the init keeps some to switch users):\n%s", as, got)
		}
	}
	// The init still signals and kills what the user runs: a timeout ends
	// the command's tree.
	res, err := e.env.Exec(ctx, backend.ExecRequest{Command: "sleep 600 & sleep 600", RunAs: user, Timeout: 100 * time.Millisecond})
	if err != nil || !res.TimedOut {
		t.Errorf("a timed-out command of uid 1000: %+v %v", res, err)
	}
	if err := e.env.WriteFile(ctx, "/home/user/.hermes/x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run("touch /home/user/mine 2>&1; echo $?", user); got == "0\n" {
		t.Errorf("uid 1000 wrote a root-owned 0755 directory: %q", got)
	}
	ch := e.env.(interface {
		Chown(ctx context.Context, path string, uid, gid uint32) error
	})
	for _, p := range []string{"/home/user", "/home/user/.hermes"} {
		if err := ch.Chown(ctx, p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if got := run("touch /home/user/mine && stat -c %u:%g /home/user/mine /home/user/.hermes", user); got != "1000:1000\n1000:1000\n" {
		t.Errorf("after chown: %q", got)
	}
}
