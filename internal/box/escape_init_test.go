package box

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Attacks on the box's PID 1, which holds the control socket to the host.

func TestEscapeInitPidfdGetfd(t *testing.T) {
	e := startTestBox(t, nil)
	// pidfd_open(2) = 434 and pidfd_getfd(2) = 438 on x86_64: take the
	// init's fd 3, its control socket to the host.
	res := e.run(t, `perl -e '$p = syscall(434, 1, 0); if ($p < 0) { print "pidfd_open denied $!\n"; exit } `+
		`$fd = syscall(438, $p, 3, 0); print $fd < 0 ? "getfd denied $!\n" : "GOT FD $fd\n"'`)
	out := string(res.Output)
	if strings.Contains(out, "GOT FD") || !strings.Contains(out, "denied") {
		t.Fatalf("a box process took the init's control socket: %s", out)
	}
}

func TestEscapeInitMemory(t *testing.T) {
	e := startTestBox(t, nil)
	res := e.run(t, "(exec 3</proc/1/mem) 2>/dev/null && echo MEM-OPENED; "+
		"cat /proc/1/maps >/dev/null 2>&1 && echo MAPS-READ; "+
		"readlink /proc/1/fd/3 >/dev/null 2>&1 && echo FD-READ; "+
		"cat /proc/1/environ >/dev/null 2>&1 && echo ENVIRON-READ; echo done")
	out := string(res.Output)
	for _, bad := range []string{"MEM-OPENED", "MAPS-READ", "FD-READ", "ENVIRON-READ"} {
		if strings.Contains(out, bad) {
			t.Fatalf("a box process could inspect the init (%s): %s", bad, out)
		}
	}
	if !strings.Contains(out, "done") {
		t.Fatalf("command did not run: %s", out)
	}
	// commands themselves stay dumpable: their own /proc entries work
	if r := e.run(t, "sleep 5 & cat /proc/$!/maps >/dev/null && echo child-ok; kill $!"); !strings.Contains(string(r.Output), "child-ok") {
		t.Fatalf("commands lost access to their own children's /proc: %s", r.Output)
	}
}

func TestEscapeSignalInit(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := context.Background()
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	res := e.run(t, "for s in SEGV BUS FPE ILL ABRT QUIT TERM INT HUP USR1 USR2 SYS TRAP PIPE ALRM; do kill -$s 1; done; echo sent")
	if !strings.Contains(string(res.Output), "sent") {
		t.Fatalf("kill loop did not run: %s", res.Output)
	}
	// the same box (not a restarted one) still answers
	r, err := b.Exec(ctx, backend.ExecRequest{Command: "echo alive", Timeout: time.Minute})
	if err != nil || trimmed(r) != "alive" {
		t.Fatalf("the init did not survive signals from inside the box: %v %+v", err, r)
	}
	if b2, _ := e.m.Box(ctx, "test-task"); b2 != b {
		t.Fatal("the box was restarted: its init died")
	}
}

func TestInitDeathReportedToCommand(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := context.Background()
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Start(ctx, backend.ExecRequest{Command: "sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(b.InitPID(), syscall.SIGKILL)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = p.Wait(wctx)
	if !errors.Is(err, ErrBoxStopped) || !strings.Contains(err.Error(), "init was killed by SIGKILL") {
		t.Fatalf("a command whose box died should say how the init ended, got %v", err)
	}
	// the next command gets a new box
	if r := e.run(t, "echo again"); trimmed(r) != "again" {
		t.Fatalf("box did not restart: %s", r.Output)
	}
}
