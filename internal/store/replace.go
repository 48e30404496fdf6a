package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hermes-go/hermes/internal/llm"
)

// ReplaceActive makes msgs the whole active conversation of a session, in
// one transaction. Messages that msgs shares with the stored conversation at
// its start and at its end stay as they are; the differing middle is
// archived (kept stored and searchable, out of the conversation) and the new
// middle takes its place. Context compression uses it to store a compacted
// history in place (Hermes compression.in_place: the session id is kept).
// When the new middle does not fit the old one's seq range, the whole active
// conversation is archived and msgs appended after it.
func (s *SQLite) ReplaceActive(ctx context.Context, sessionID string, msgs []llm.Message) error {
	stored, err := s.StoredMessages(ctx, sessionID, false)
	if err != nil {
		return err
	}
	plan, change := PlanReplace(stored, msgs)
	if !change {
		return nil
	}
	inPlace, first, last, newMid := plan.InPlace, plan.First, plan.Last, plan.New
	rows := make([]messageRow, len(newMid))
	calls := 0
	for i, m := range newMid {
		r, err := encodeMessage(m)
		if err != nil {
			return err
		}
		rows[i] = r
		calls += len(m.ToolCalls)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = message_count + ?,
			tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?`, len(newMid), calls, millis(now), sessionID)
		if err != nil {
			return err
		}
		if err := mustAffect(res, sessionID); err != nil {
			return err
		}
		seq := first
		if inPlace {
			_, err = tx.ExecContext(ctx, `UPDATE messages SET active = 0
				WHERE session_id = ? AND active = 1 AND seq BETWEEN ? AND ?`, sessionID, first, last)
		} else {
			if err = tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?",
				sessionID).Scan(&seq); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1`, sessionID)
		}
		if err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := tx.ExecContext(ctx, insertMessage, insertArgs(sessionID, seq, r, now)...); err != nil {
				return err
			}
			seq++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace the conversation of session %s: %w", sessionID, err)
	}
	return nil
}

// ReplacePlan is how ReplaceActive changes a conversation: with InPlace,
// the active messages with First ≤ seq ≤ Last are archived and New takes
// their seqs from First on; without, every active message is archived and
// New (the whole conversation) is appended after the last seq.
type ReplacePlan struct {
	InPlace     bool
	First, Last int64
	New         []llm.Message
}

// PlanReplace compares the stored active conversation with msgs (see
// ReplaceActive); change is false when they are the same.
func PlanReplace(stored []StoredMessage, msgs []llm.Message) (plan ReplacePlan, change bool) {
	p := 0
	for p < len(stored) && p < len(msgs) && SameMessage(stored[p].Message, msgs[p]) {
		p++
	}
	q := 0
	for q < len(stored)-p && q < len(msgs)-p && SameMessage(stored[len(stored)-1-q].Message, msgs[len(msgs)-1-q]) {
		q++
	}
	oldMid, newMid := stored[p:len(stored)-q], msgs[p:len(msgs)-q]
	if len(oldMid) == 0 && len(newMid) == 0 {
		return ReplacePlan{}, false
	}
	if len(oldMid) > 0 && len(newMid) <= int(oldMid[len(oldMid)-1].Seq-oldMid[0].Seq+1) {
		return ReplacePlan{InPlace: true, First: oldMid[0].Seq, Last: oldMid[len(oldMid)-1].Seq, New: newMid}, true
	}
	return ReplacePlan{New: msgs}, true
}

// SameMessage reports whether two messages are the same conversation entry.
func SameMessage(a, b llm.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}
