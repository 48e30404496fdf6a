package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// Writes in one process go through one write slot, so they queue in Go
// (first come, first served, honouring each caller's context) instead of
// in SQLite's busy handler, which retries on a sleep schedule and lets a
// late writer overtake one that has waited for seconds: with 1,000 chats
// in one gateway that put the p99 of a turn's writes above 40 s. Writers in
// other processes still meet at SQLite's lock (BEGIN IMMEDIATE, busy
// timeout).
//
// The writes of a turn (message appends, usage, a new session's row) are
// group-committed: writes that arrive while another write holds the slot
// are committed together, in arrival order, by whichever of them takes the
// slot next, each in its own savepoint so one failing write does not fail
// the others. Every write is still committed before its call returns. On a
// gateway with hundreds of chats this turns hundreds of transactions (and
// the scheduling gaps of the goroutine holding the slot) into a few.

// writeOp is one grouped write waiting for its commit.
type writeOp struct {
	fn func(ctx context.Context, tx *sql.Tx) error
	// sqls are the statements fn runs through txExec/txQueryRow, prepared
	// before the transaction begins (prepareFirst).
	sqls []string
	// err is set, then done is closed, by the committing writer.
	err  error
	done chan struct{}
}

// acquireWrite takes the write slot, or returns ctx's error.
func (s *SQLite) acquireWrite(ctx context.Context) error {
	select {
	case s.writeSlot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *SQLite) releaseWrite() { <-s.writeSlot }

// inTx runs fn in one write transaction (BEGIN IMMEDIATE) and commits it.
func (s *SQLite) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.acquireWrite(ctx); err != nil {
		return err
	}
	defer s.releaseWrite()
	return s.inTxHeld(ctx, fn)
}

// inTxHeld is inTx for a caller that holds the write slot.
func (s *SQLite) inTxHeld(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// The statements fn met for the first time are prepared once tx has
	// given its connection back (stmtcache.go).
	defer s.stmts.prepareLater(context.WithoutCancel(ctx), s.db)
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.commits.Add(1)
	return nil
}

// exec runs one writing statement through the write slot and the
// statement cache.
func (s *SQLite) exec(ctx context.Context, sqlText string, args ...any) (sql.Result, error) {
	if err := s.acquireWrite(ctx); err != nil {
		return nil, err
	}
	defer s.releaseWrite()
	st, err := s.stmts.stmt(ctx, s.db, sqlText)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.db.ExecContext(ctx, sqlText, args...)
	}
	return st.ExecContext(ctx, args...)
}

// txExec runs sqlText on tx through the statement cache.
func (s *SQLite) txExec(ctx context.Context, tx *sql.Tx, sqlText string, args ...any) (sql.Result, error) {
	if st := s.stmts.inTx(ctx, tx, sqlText); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, sqlText, args...)
}

// txQueryRow runs sqlText on tx through the statement cache.
func (s *SQLite) txQueryRow(ctx context.Context, tx *sql.Tx, sqlText string, args ...any) *sql.Row {
	if st := s.stmts.inTx(ctx, tx, sqlText); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, sqlText, args...)
}

// AppendMessage adds m at the end of a session's conversation and returns
// its seq (1 for the first message). The message is committed to the
// database before AppendMessage returns: a crash of hermes afterwards
// cannot lose it. Concurrent appends (many sessions in one gateway) share
// one commit; see the comment at the top of write.go.
func (s *SQLite) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	row, err := encodeMessage(m)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = s.group(ctx, appendSQL, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		seq, err = s.appendTx(ctx, tx, sessionID, row, len(m.ToolCalls), s.now())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("append message to session %s: %w", sessionID, err)
	}
	return seq, nil
}

// AppendMessageUsage is AppendMessage and AddUsage(u, apiCalls) in one
// write: a model's answer with the usage of the call that produced it.
func (s *SQLite) AppendMessageUsage(ctx context.Context, sessionID string, m llm.Message, u llm.Usage, apiCalls int) (int64, error) {
	row, err := encodeMessage(m)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = s.group(ctx, appendUsageSQL, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		var err error
		if seq, err = s.appendTx(ctx, tx, sessionID, row, len(m.ToolCalls), now); err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, addUsage, usageArgs(sessionID, u, apiCalls, now)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("append message to session %s: %w", sessionID, err)
	}
	return seq, nil
}

// group runs fn in the next group commit and returns once that commit is
// done (fn's error, or the commit's). sqls lists the statements fn runs
// through the statement cache. ctx ending while fn still waits withdraws
// it.
func (s *SQLite) group(ctx context.Context, sqls []string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	op := &writeOp{fn: fn, sqls: sqls, done: make(chan struct{})}
	s.pendingMu.Lock()
	s.pending = append(s.pending, op)
	s.pendingMu.Unlock()
	select {
	case s.writeSlot <- struct{}{}:
		s.commitPending(ctx)
		s.releaseWrite()
	case <-op.done:
	case <-ctx.Done():
		if s.withdraw(op) {
			return ctx.Err()
		}
	}
	<-op.done
	return op.err
}

// withdraw removes op from the pending writes; false when a writer has
// already taken it (its outcome then comes on op.done).
func (s *SQLite) withdraw(op *writeOp) bool {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	for i, r := range s.pending {
		if r == op {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return true
		}
	}
	return false
}

// commitPending commits every pending write in one transaction and
// reports each outcome. The caller holds the write slot. The batch is
// committed even if ctx (the caller's) ends meanwhile: other callers'
// writes are in it.
func (s *SQLite) commitPending(ctx context.Context) {
	s.pendingMu.Lock()
	batch := s.pending
	s.pending = nil
	s.pendingMu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	s.prepareFirst(ctx, batch)
	err := s.inTxHeld(ctx, func(tx *sql.Tx) error {
		if len(batch) == 1 {
			batch[0].err = batch[0].fn(ctx, tx)
			return batch[0].err
		}
		for _, op := range batch {
			if _, err := s.txExec(ctx, tx, "SAVEPOINT grouped_write"); err != nil {
				return err
			}
			if op.err = op.fn(ctx, tx); op.err != nil {
				if _, err := s.txExec(ctx, tx, "ROLLBACK TO grouped_write"); err != nil {
					return err
				}
			}
			if _, err := s.txExec(ctx, tx, "RELEASE grouped_write"); err != nil {
				return err
			}
		}
		return nil
	})
	for _, op := range batch {
		if err != nil && op.err == nil {
			op.err = err
		}
		close(op.done)
	}
}

// prepareFirst caches the statements the batch's writes declared before
// their transaction begins. A statement first met inside a transaction
// runs unprepared there and is prepared again after it (stmtcache.go):
// twice the parse and plan, and a statement on messages compiles its four
// index triggers and the messages_search view each time. A one-shot run
// meets every statement of its turn for the first time.
func (s *SQLite) prepareFirst(ctx context.Context, batch []*writeOp) {
	for _, op := range batch {
		for _, q := range op.sqls {
			_, _ = s.stmts.stmt(ctx, s.db, q) // an error shows when fn runs q
		}
	}
}

const (
	bumpMessageCount = `UPDATE sessions SET message_count = message_count + 1,
		tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?`
	nextSeq = "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?"
)

// appendSQL are the statements of appendTx; appendUsageSQL those of
// AppendMessageUsage.
var (
	appendSQL      = []string{bumpMessageCount, nextSeq, insertMessage}
	appendUsageSQL = []string{bumpMessageCount, nextSeq, insertMessage, addUsage}
)

// appendTx adds row at the end of a session's conversation inside tx,
// updates the session's counters and returns the row's seq.
func (s *SQLite) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, row messageRow, toolCalls int, now time.Time) (int64, error) {
	res, err := s.txExec(ctx, tx, bumpMessageCount, toolCalls, millis(now), sessionID)
	if err != nil {
		return 0, err
	}
	if err := mustAffect(res, sessionID); err != nil {
		return 0, err
	}
	var seq int64
	if err := s.txQueryRow(ctx, tx, nextSeq, sessionID).Scan(&seq); err != nil {
		return 0, err
	}
	_, err = s.txExec(ctx, tx, insertMessage, insertArgs(sessionID, seq, row, now)...)
	return seq, err
}
