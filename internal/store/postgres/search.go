package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// Search finds messages as store.SQLite.Search does, with PostgreSQL's
// means: words through the fts column (to_tsquery over the query
// translated by tsQuery; relevance is ts_rank_cd over the newest
// rankCandidates matches, then newer first), then, when words find
// nothing or the query holds CJK text, plain text and a single "phrase"
// as case-insensitive substrings of the indexed text (ILIKE, served by
// the pg_trgm index; newest first), and plain text with a word shorter
// than three characters as a substring of the newest scanWindow messages'
// content.
//
// Where it differs from SQLite (same hits on the conformance corpus):
// relevance scores are ts_rank_cd's, not bm25's, so equally matching
// messages may come in another order; Snowball English stems a few
// words that FTS5's Porter keeps apart (deployment and deploy); a query
// with operators that the word index does not match is not retried as
// substrings; NEAR(...) needs its phrases without checking the distance.
func (db *DB) Search(ctx context.Context, o store.SearchOptions) ([]store.Hit, error) {
	q, o, err := store.CheckSearch(o)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, store.SearchTimeout)
	defer cancel()
	hits, err := db.search(sctx, q, o)
	if err != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return nil, &store.SlowQueryError{Query: q, After: store.SearchTimeout}
	}
	return hits, err
}

// rankCandidates bounds relevance ranking, as in SQLite's store.
const rankCandidates = 2000

// scanWindow bounds the short-word scan to the newest messages, as in
// SQLite's store.
const scanWindow = 50000

func (db *DB) search(ctx context.Context, q string, o store.SearchOptions) ([]store.Hit, error) {
	if !store.HasCJK(q) {
		tsq, err := tsQuery(q)
		if err != nil {
			return nil, &store.QueryError{Query: q, Reason: err.Error()}
		}
		hits, err := db.searchWords(ctx, q, tsq, o)
		if err != nil || len(hits) > 0 {
			return hits, err
		}
	}
	plain := store.IsPlainText(q)
	phrase := len(q) > 2 && q[0] == '"' && q[len(q)-1] == '"' && strings.Count(q, `"`) == 2
	if !plain && !phrase {
		return nil, nil
	}
	terms := store.QueryTerms(q)
	short := false
	for _, t := range terms {
		short = short || utf8.RuneCountInString(t) < 3
	}
	if !short && len(terms) > 0 {
		hits, err := db.searchSubstrings(ctx, terms, o)
		if err != nil || len(hits) > 0 {
			return hits, err
		}
	}
	if plain && store.HasShortWord(q) {
		return db.searchScan(ctx, q, o)
	}
	return nil, nil
}

const hitColumns = `m.id, m.session_id, coalesce(s.title, ''), m.seq, m.role, coalesce(m.tool_name, ''),
	m.created_at, m.active, m.content, m.tool_names, m.tool_args`

// filters appends o's session and role filters over messages m to args
// and returns the SQL.
func filters(o store.SearchOptions, args *[]any) string {
	var b strings.Builder
	if o.SessionID != "" {
		*args = append(*args, o.SessionID)
		fmt.Fprintf(&b, " AND m.session_id = $%d", len(*args))
	}
	if len(o.Roles) > 0 {
		*args = append(*args, o.Roles)
		fmt.Fprintf(&b, " AND m.role = ANY($%d)", len(*args))
	}
	return b.String()
}

func order(o store.SearchOptions) string {
	if o.Sort == store.SortOldest {
		return " ORDER BY m.id ASC"
	}
	return " ORDER BY m.id DESC"
}

func (db *DB) searchWords(ctx context.Context, q, tsq string, o store.SearchOptions) ([]store.Hit, error) {
	args := []any{tsq}
	where := filters(o, &args)
	args = append(args, o.Limit)
	limit := fmt.Sprintf(" LIMIT $%d", len(args))
	var sqlText string
	if o.Sort == store.SortRelevance {
		sqlText = `WITH q AS (SELECT to_tsquery('hermes', $1) AS q),
			c AS (SELECT m.id FROM messages AS m, q WHERE m.fts @@ q.q` + where +
			fmt.Sprintf(" ORDER BY m.id DESC LIMIT %d)", rankCandidates) + `
			SELECT ` + hitColumns + ` FROM c JOIN messages AS m ON m.id = c.id
			JOIN sessions AS s ON s.id = m.session_id, q
			ORDER BY ts_rank_cd(m.fts, q.q) DESC, m.id DESC` + limit
	} else {
		sqlText = `SELECT ` + hitColumns + ` FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
			WHERE m.fts @@ to_tsquery('hermes', $1)` + where + order(o) + limit
	}
	return db.queryHits(ctx, sqlText, args, "fts", store.QueryTerms(q), o)
}

// substringWindow is how many of the newest (oldest, for SortOldest)
// messages searchSubstrings scans in id order before it asks the trigram
// index for the rest.
const substringWindow = 20000

// searchSubstrings finds messages whose indexed text holds every term, in
// any case, in two steps. ILIKE's selectivity is a guess, so given
// "ORDER BY id DESC LIMIT n" PostgreSQL walks the primary key backwards
// and tests every message until n match: instant for a common substring,
// the whole table (1.2 s over 1 M messages) for one that matches nothing.
// So the newest substringWindow messages are walked that way (bounded);
// when they hold fewer than the limit, the rest is searched through the
// pg_trgm index ("ORDER BY id + 0" keeps the planner off the key order),
// which answers a rare or absent substring at once.
func (db *DB) searchSubstrings(ctx context.Context, terms []string, o store.SearchOptions) ([]store.Hit, error) {
	edge, cmpIn, cmpOut := "max(id)", ">", "<="
	if o.Sort == store.SortOldest {
		edge, cmpIn, cmpOut = "min(id)", "<", ">="
	}
	window := func(cmp string) string {
		sign := "-"
		if o.Sort == store.SortOldest {
			sign = "+"
		}
		return fmt.Sprintf("m.id %s coalesce((SELECT %s FROM messages), 0) %s %d", cmp, edge, sign, substringWindow)
	}
	hits, err := db.substringQuery(ctx, terms, o, window(cmpIn), order(o), o.Limit)
	if err != nil || len(hits) >= o.Limit {
		return hits, err
	}
	dir := " DESC"
	if o.Sort == store.SortOldest {
		dir = " ASC"
	}
	rest, err := db.substringQuery(ctx, terms, o, window(cmpOut), " ORDER BY m.id + 0"+dir, o.Limit-len(hits))
	return append(hits, rest...), err
}

// substringQuery runs one step of searchSubstrings: messages within
// where (an id range) whose indexed text holds every term.
func (db *DB) substringQuery(ctx context.Context, terms []string, o store.SearchOptions, where, orderBy string, limit int) ([]store.Hit, error) {
	var args []any
	var conds []string
	for _, t := range terms {
		args = append(args, "%"+escapeLike(t)+"%")
		conds = append(conds, fmt.Sprintf("(m.content || ' ' || m.tool_names || ' ' || m.tool_args) ILIKE $%d", len(args)))
	}
	filter := filters(o, &args)
	args = append(args, limit)
	sqlText := `SELECT ` + hitColumns + ` FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
		WHERE ` + where + ` AND ` + strings.Join(conds, " AND ") + filter + orderBy + fmt.Sprintf(" LIMIT $%d", len(args))
	return db.queryHits(ctx, sqlText, args, "trigram", terms, o)
}

// searchScan matches q literally in the content of the newest scanWindow
// messages (all of one session's when o.SessionID is set).
func (db *DB) searchScan(ctx context.Context, q string, o store.SearchOptions) ([]store.Hit, error) {
	window := int64(scanWindow)
	if o.SessionID != "" {
		window = 1 << 62
	}
	args := []any{window, "%" + escapeLike(q) + "%"}
	where := filters(o, &args)
	args = append(args, o.Limit)
	sqlText := `SELECT ` + hitColumns + ` FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
		WHERE m.id > coalesce((SELECT max(id) FROM messages), 0) - $1 AND m.content ILIKE $2` + where +
		order(o) + fmt.Sprintf(" LIMIT $%d", len(args))
	return db.queryHits(ctx, sqlText, args, "scan", []string{q}, o)
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// queryHits runs a hit query and cuts each hit's snippet around the first
// of terms found in its content, else its tool names, else its arguments.
func (db *DB) queryHits(ctx context.Context, sqlText string, args []any, index string, terms []string, o store.SearchOptions) ([]store.Hit, error) {
	rows, err := db.pool.Query(ctx, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	open, close := o.Marks()
	var hits []store.Hit
	for rows.Next() {
		var h store.Hit
		var role, content, names, targs string
		var created int64
		if err := rows.Scan(&h.MessageID, &h.SessionID, &h.Title, &h.Seq, &role, &h.ToolName, &created, &h.Active,
			&content, &names, &targs); err != nil {
			return nil, err
		}
		h.Role, h.Date, h.Index = llm.Role(role), fromMillis(created), index
		text := content
		if index == "fts" && !containsAny(content, terms) {
			for _, alt := range []string{names, targs} {
				if containsAny(alt, terms) {
					text = alt
					break
				}
			}
		}
		h.Snippet = store.Excerpt(text, terms, open, close)
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// containsAny reports whether text holds any term, ignoring case.
func containsAny(text string, terms []string) bool {
	lower := strings.ToLower(text)
	for _, t := range terms {
		if t != "" && strings.Contains(lower, strings.ToLower(t)) {
			return true
		}
	}
	return false
}
