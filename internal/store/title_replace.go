package store

import (
	"context"
	"fmt"
)

// ReplaceTitle sets session id's title to title only while its title is
// still old (compared exactly), and reports whether it did: a title the
// person set meanwhile (/title, `hermes sessions rename`) wins over one
// computed from an older read. title is cleaned and checked as SetTitle
// does; a title another session holds returns SetTitle's "already used"
// error.
func (s *SQLite) ReplaceTitle(ctx context.Context, id, old, title string) (bool, error) {
	title = cleanTitle(title)
	if title == "" || len([]rune(title)) > MaxTitleLen {
		return false, fmt.Errorf("title must be 1 to %d characters", MaxTitleLen)
	}
	if err := s.checkTitleNotID(ctx, s.db, title); err != nil {
		return false, err
	}
	res, err := s.exec(ctx, "UPDATE sessions SET title = ? WHERE id = ? AND title = ?", title, id, old)
	if err != nil {
		if isConstraint(err, "sessions.title") {
			return false, fmt.Errorf("title %q is already used by another session; choose another title", title)
		}
		return false, fmt.Errorf("set title: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
