package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hermes-go/hermes/internal/llm"
)

// ReplaceActive makes msgs the whole active conversation of a session, in
// one transaction: the current active messages are archived (kept stored
// and searchable, out of the conversation) and msgs are appended after
// them. Context compression uses it to store a compacted history (Hermes
// compression.in_place: the session id is kept).
func (s *Store) ReplaceActive(ctx context.Context, sessionID string, msgs []llm.Message) error {
	rows := make([]messageRow, len(msgs))
	calls := 0
	for i, m := range msgs {
		r, err := encodeMessage(m)
		if err != nil {
			return err
		}
		rows[i] = r
		calls += len(m.ToolCalls)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = message_count + ?,
			tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?`, len(msgs), calls, millis(now), sessionID)
		if err != nil {
			return err
		}
		if err := mustAffect(res, sessionID); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?",
			sessionID).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1`, sessionID); err != nil {
			return err
		}
		for _, r := range rows {
			seq++
			if _, err := tx.ExecContext(ctx, insertMessage, insertArgs(sessionID, seq, r, now)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace the conversation of session %s: %w", sessionID, err)
	}
	return nil
}
