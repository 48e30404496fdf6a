package store

import (
	"context"
	"errors"
	"os/exec"
	"testing"
)

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
