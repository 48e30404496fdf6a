package store

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A session's turn lock is exclusive across Store handles (processes open
// their own), is released by unlock, and names its holder when busy.
func TestLockSessionExclusive(t *testing.T) {
	a := openTestStore(t, "")
	b, err := Open(a.Path(), WithClock(a.now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	unlock, err := a.LockSession(ctx, "s1", "hermes chat")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.LockSession(ctx, "s1", "gateway")
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrSessionBusy) || busy.Owner != "hermes chat" {
		t.Fatalf("second lock: %v, want busy held by hermes chat", err)
	}
	if !strings.Contains(err.Error(), "s1") || !strings.Contains(err.Error(), "pid") {
		t.Errorf("busy error %q does not name the session and holder pid", err)
	}
	// Another session is independent.
	u2, err := b.LockSession(ctx, "s2", "gateway")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	unlock()
	unlock() // twice is harmless
	u3, err := b.LockSession(ctx, "s1", "gateway")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	u3()
}

// A lock left by a process that has exited (kill -9) is taken over: the
// holder is recognised by pid and process start time, so a reused pid does
// not keep it either.
func TestLockSessionTakesOverStaleHolder(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	me := selfIdentity()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	live, ok := processStart(cmd.Process.Pid)
	if !ok {
		t.Fatal("cannot read the start time of a live process")
	}
	insert := func(pid int, start int64, boot string) {
		t.Helper()
		if _, err := st.db.Exec(`INSERT OR REPLACE INTO session_locks
			(session_id, owner, token, pid, pid_start, boot_id, acquired_at) VALUES ('s', 'other', 't', ?, ?, ?, 0)`,
			pid, start, boot); err != nil {
			t.Fatal(err)
		}
	}
	insert(cmd.Process.Pid, live, me.boot)
	if _, err := st.LockSession(ctx, "s", "me"); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("live holder: %v, want busy", err)
	}
	for name, holder := range map[string]processIdentity{
		"pid reused by a later process": {pid: cmd.Process.Pid, start: live - 1, boot: me.boot},
		"before a reboot":               {pid: cmd.Process.Pid, start: live, boot: "another-boot"},
	} {
		insert(holder.pid, holder.start, holder.boot)
		unlock, err := st.LockSession(ctx, "s", "me")
		if err != nil {
			t.Fatalf("%s: %v, want the stale lock taken over", name, err)
		}
		unlock()
	}
	cmd.Process.Kill()
	cmd.Wait()
	insert(cmd.Process.Pid, live, me.boot)
	unlock, err := st.LockSession(ctx, "s", "me")
	if err != nil {
		t.Fatalf("killed holder: %v, want the stale lock taken over", err)
	}
	unlock()
}

// WaitLockSession tells the caller once that it waits, then gets the lock
// when the holder releases it; a cancelled context ends the wait.
func TestWaitLockSession(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	unlock, err := st.LockSession(ctx, "s", "first")
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan *BusyError, 2)
	got := make(chan error, 1)
	go func() {
		u, err := WaitLockSession(ctx, st, "s", "second", 10*time.Millisecond, func(b *BusyError) { told <- b })
		if err == nil {
			u()
		}
		got <- err
	}()
	b := <-told
	if b.Owner != "first" {
		t.Fatalf("waiting notice names %q", b.Owner)
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(told) != 0 {
		t.Fatal("the waiting notice was given more than once")
	}

	unlock, _ = st.LockSession(ctx, "s", "first")
	defer unlock()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := WaitLockSession(cctx, st, "s", "second", 0, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
