package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrSessionBusy is matched (errors.Is) by a *BusyError: another live
// process or owner holds the session's turn lock.
var ErrSessionBusy = errors.New("session is busy")

// BusyError says who holds a session's turn lock.
type BusyError struct {
	SessionID string
	Owner     string // what the holder called itself: "hermes chat", "gateway"...
	PID       int
	Since     time.Time // when the holder took the lock (UTC)
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is busy: %s (pid %d) has been running a turn in it since %s",
		e.SessionID, e.Owner, e.PID, e.Since.Local().Format("15:04:05"))
}

// Is makes errors.Is(err, ErrSessionBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrSessionBusy }

// processIdentity names a process across pid reuse: its pid, its start time
// (field 22 of /proc/PID/stat, clock ticks since boot) and the boot it runs in.
type processIdentity struct {
	pid   int
	start int64
	boot  string
}

// selfIdentity is this process's identity.
func selfIdentity() processIdentity {
	pid := os.Getpid()
	start, _ := processStart(pid)
	return processIdentity{pid: pid, start: start, boot: bootID()}
}

// processStart reads the start time of pid from /proc/PID/stat; ok is false
// when the process does not exist or is a zombie (it has exited).
func processStart(pid int) (start int64, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces and ')': fields count from
	// after its last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return 0, false
	}
	start, err = strconv.ParseInt(fields[19], 10, 64) // field 22 overall
	return start, err == nil
}

func bootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// alive reports whether the process that took a lock still runs.
func (p processIdentity) alive() bool {
	if p.boot != bootID() {
		return false // the machine rebooted since
	}
	start, ok := processStart(p.pid)
	return ok && start == p.start
}

// LockSession takes the turn lock of a session for owner (a short label
// shown to whoever finds the session busy, e.g. "hermes chat"). The lock
// lives in state.db, so it works across processes; it is held until unlock
// is called or the process ends. A lock whose holder has exited (killed,
// crashed: detected by pid, process start time and boot id) is taken over.
// While a live holder has it, LockSession returns a *BusyError at once.
// The session row need not exist yet. unlock is safe to call more than once.
func (s *SQLite) LockSession(ctx context.Context, sessionID, owner string) (unlock func(), err error) {
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok[:])
	me := selfIdentity()
	var busy *BusyError
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var (
			holder   processIdentity
			hOwner   string
			acquired int64
		)
		err := tx.QueryRowContext(ctx, `SELECT owner, pid, pid_start, boot_id, acquired_at
			FROM session_locks WHERE session_id = ?`, sessionID).
			Scan(&hOwner, &holder.pid, &holder.start, &holder.boot, &acquired)
		switch {
		case err == nil && holder.alive():
			busy = &BusyError{SessionID: sessionID, Owner: hOwner, PID: holder.pid, Since: fromMillis(acquired)}
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO session_locks
			(session_id, owner, token, pid, pid_start, boot_id, acquired_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			sessionID, owner, token, me.pid, me.start, me.boot, millis(s.now()))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	if busy != nil {
		return nil, busy
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		_, _ = s.exec(context.WithoutCancel(ctx),
			"DELETE FROM session_locks WHERE session_id = ? AND token = ?", sessionID, token)
	}, nil
}

// WaitLockSession is s.LockSession that waits while the session is busy,
// polling every pollEvery (≤ 0: 200 ms). waiting, if not nil, is called
// once with the holder when the first attempt finds the session busy (to
// tell a person). It returns ctx's error if ctx ends first.
func WaitLockSession(ctx context.Context, s Store, sessionID, owner string, pollEvery time.Duration,
	waiting func(*BusyError)) (unlock func(), err error) {
	if pollEvery <= 0 {
		pollEvery = 200 * time.Millisecond
	}
	told := false
	for {
		unlock, err := s.LockSession(ctx, sessionID, owner)
		var busy *BusyError
		if !errors.As(err, &busy) {
			return unlock, err
		}
		if !told && waiting != nil {
			waiting(busy)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(pollEvery):
		}
	}
}
