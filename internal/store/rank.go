package store

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"
)

// Relevance ranking (SortRelevance) over the word index.
//
// FTS5's bm25() costs two things: a score per ranked row, and, once per
// query, a walk of every phrase's whole match list to count the messages
// holding it (the phrase's IDF). The second is what made common words slow:
// "the" is in three quarters of the messages, and counting them took
// longer than everything else the search did. So a search:
//
//  1. takes its candidates from the word index: every match of the query
//     when it has at most rankCandidates of them, so that the best bm25
//     match is found however old it is; for a broader query (every phrase
//     in thousands of messages, where bm25 tells apart little more than
//     message length) its newest rankCandidates matches;
//  2. estimates each phrase's message count from the first dfProbe
//     entries of its match list (exact below that, extrapolated from the
//     id span they cover above it);
//  3. ranks the candidates by bm25 over the phrases that are not very
//     common: whose words are together in at most max(commonFloor,
//     1/commonShare of the messages).
//     A very common phrase has an IDF near zero (FTS5 clamps it to 1e-6
//     past half the messages), so leaving it out changes little but the
//     cost; a prefix* phrase is ranked by its stem as a whole word
//     (expanding the prefix costs a merge of every term it covers);
//  4. orders candidates that the ranked phrases do not match after the
//     ranked ones, newest first. A query made only of very common phrases
//     therefore comes newest first.
//
// Queries using operators (OR, NOT, NEAR, column filters, parentheses) are
// ranked by bm25 over the whole expression, as before.
const (
	dfProbe     = 1000
	commonShare = 10
	commonFloor = 20000
)

// plainPhrases splits an FTS5 expression made only of phrases joined by
// implicit AND ("a b*", `"c d" e`) into them; ok is false for anything
// else (operators, parentheses, column filters, ^ or + markers).
func plainPhrases(match string) (phrases []string, ok bool) {
	for i := 0; i < len(match); {
		switch c := match[i]; {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '"':
			end := strings.IndexByte(match[i+1:], '"')
			if end < 0 {
				return nil, false
			}
			j := i + end + 2
			if j < len(match) && match[j] == '*' {
				j++
			}
			if j < len(match) && !strings.ContainsRune(" \t\n", rune(match[j])) {
				return nil, false // "a"b or "a":x
			}
			phrases = append(phrases, match[i:j])
			i = j
		default:
			j := i
			for j < len(match) && !strings.ContainsRune(" \t\n", rune(match[j])) {
				j++
			}
			w := match[i:j]
			switch w {
			case "AND", "OR", "NOT", "NEAR":
				return nil, false
			}
			if strings.ContainsAny(w, `():^+{}"-`) || strings.Contains(strings.TrimSuffix(w, "*"), "*") {
				return nil, false
			}
			phrases = append(phrases, w)
			i = j
		}
	}
	return phrases, len(phrases) > 0
}

// rankExpr returns the FTS5 expression candidates of match are ranked by
// (see the top of this file); "" when every phrase is very common.
func (s *SQLite) rankExpr(ctx context.Context, table, match string) (string, error) {
	phrases, ok := plainPhrases(match)
	if !ok {
		return match, nil
	}
	lo, hi, err := s.idSpan(ctx)
	if err != nil {
		return "", err
	}
	span := hi - lo + 1
	floor := int64(commonFloor)
	if s.rankFloor != 0 {
		floor = s.rankFloor
	}
	limit := max(floor, span/commonShare)
	var kept []string
	for _, p := range phrases {
		if strings.HasSuffix(p, "*") {
			p = strings.TrimSuffix(p, "*")
			if !strings.HasPrefix(p, `"`) {
				p = `"` + p + `"`
			}
		}
		// A phrase is probed by its words and kept when their match lists
		// are short together: its IDF count walks all of them (so would
		// walking the newest matches of a rare phrase of common words,
		// such as "connection refused").
		var words int64
		for _, w := range phraseWords(p) {
			df, err := s.docFreq(ctx, table, `"`+w+`"`, hi, span)
			if err != nil {
				return "", err
			}
			words += df
		}
		rare := words > 0 && words <= limit
		if rare {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " "), nil
}

// phraseWords returns the words of an FTS5 phrase (a bareword or "quoted
// text"), split where the unicode61 tokenizer splits: at characters that
// are not letters, digits or non-ASCII.
func phraseWords(p string) []string {
	return strings.FieldsFunc(strings.Trim(p, `"`), func(r rune) bool {
		return r < 0x80 && !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	})
}

// docFreq estimates how many messages match phrase: exact below dfProbe,
// otherwise dfProbe scaled by the share of the id span [hi-span+1, hi]
// that its newest dfProbe matches cover.
func (s *SQLite) docFreq(ctx context.Context, table, phrase string, hi, span int64) (int64, error) {
	// Counted in SQL: a row per probed match through the driver cost
	// more than the probe.
	var n, last int64
	if err := s.stmts.queryRow(ctx, s.db, `SELECT count(*), coalesce(min(id), 0) FROM (
		SELECT rowid AS id FROM `+table+` WHERE `+table+` MATCH ? ORDER BY rowid DESC LIMIT ?)`,
		phrase, dfProbe).Scan(&n, &last); err != nil {
		return 0, err
	}
	if n < dfProbe {
		return n, nil
	}
	covered := max(1, hi-last+1)
	return n * span / covered, nil
}

// roleOverfetch is how many ranked ids per wanted hit a role-filtered
// search ranks before filtering (see rankedIDs).
const roleOverfetch = 4

// rankedIDs returns the ids of the best limit matches of match that pass
// o's filters (see rankedWhere). A role filter alone is applied to the
// ranked ids rather than during the walk: reading each candidate's message
// row to learn its role cost more than ranking it (a random page of the
// messages table per candidate). When too few of the best
// limit*roleOverfetch pass, the filtered walk runs after all.
func (s *SQLite) rankedIDs(ctx context.Context, table, match string, o SearchOptions, limit int) ([]int64, error) {
	if len(o.Roles) > 0 && o.SessionID == "" {
		want := limit * roleOverfetch
		ids, err := s.rankedWhere(ctx, table, match, "", nil, want)
		if err != nil {
			return nil, err
		}
		kept, err := s.withRoles(ctx, ids, o.Roles)
		if err != nil {
			return nil, err
		}
		if len(kept) >= limit || len(ids) < want {
			return kept[:min(limit, len(kept))], nil
		}
	}
	where, wargs := filterClause(o)
	rwhere, rargs := sessionRange(table, o)
	return s.rankedWhere(ctx, table, match, where+rwhere, append(wargs, rargs...), limit)
}

// sessionRange returns a condition on table's rowid that keeps FTS5's walk
// within the ids of o.SessionID's messages ("" without a session filter):
// the session filter alone reads the message row of every match in the
// store.
func sessionRange(table string, o SearchOptions) (string, []any) {
	if o.SessionID == "" {
		return "", nil
	}
	return " AND " + table + ".rowid BETWEEN (SELECT min(id) FROM messages WHERE session_id = ?)" +
		" AND (SELECT max(id) FROM messages WHERE session_id = ?)", []any{o.SessionID, o.SessionID}
}

// withRoles returns the ids, in their order, of the messages whose role is
// one of roles.
func (s *SQLite) withRoles(ctx context.Context, ids []int64, roles []string) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, _ := json.Marshal(ids)
	args := []any{string(list)}
	for _, r := range roles {
		args = append(args, r)
	}
	pass, err := s.int64s(ctx, `SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?)) AND role IN (`+
		strings.TrimSuffix(strings.Repeat("?, ", len(roles)), ", ")+`)`, args...)
	if err != nil {
		return nil, err
	}
	ok := make(map[int64]bool, len(pass))
	for _, id := range pass {
		ok[id] = true
	}
	kept := ids[:0:0]
	for _, id := range ids {
		if ok[id] {
			kept = append(kept, id)
		}
	}
	return kept, nil
}

// rankedWhere returns the ids of the best limit matches: the matches of
// match (after the filters in where; the newest rankCandidates of them
// when there are more), ranked by bm25 over rankExpr, the unranked ones
// after them newest first.
func (s *SQLite) rankedWhere(ctx context.Context, table, match, where string, wargs []any, limit int) ([]int64, error) {
	join := ""
	if where != "" { // filters need the message row; skip the lookup without them
		join = " JOIN messages AS m ON m.id = " + table + ".rowid"
	}
	expr, err := s.rankExpr(ctx, table, match)
	if err != nil {
		return nil, err
	}
	if expr == match { // rank the window in the walk that finds it
		return s.int64s(ctx, `SELECT id FROM (
			SELECT `+table+`.rowid AS id, `+table+`.rank AS score FROM `+table+join+`
			WHERE `+table+` MATCH ?`+where+` ORDER BY `+table+`.rowid DESC LIMIT ?)
			ORDER BY score, id DESC LIMIT ?`,
			append(append([]any{match}, wargs...), rankCandidates, limit)...)
	}
	windowSQL := `SELECT ` + table + `.rowid FROM ` + table + join + `
		WHERE ` + table + ` MATCH ?` + where + ` ORDER BY ` + table + `.rowid DESC LIMIT ?`
	windowArgs := append([]any{match}, wargs...)
	var ranked []int64
	if expr != "" {
		// The candidates stay inside SQLite (a row per candidate through
		// the driver cost more than ranking it). The rowid range lets FTS5
		// walk only the candidates' part of the match list; the unary +
		// keeps the IN a filter, not a probe per id. bm25() rather than
		// rank: FTS5 sorts by rank itself, scoring every match in the range
		// before the IN filter runs, where SQLite scores only the rows that
		// pass it. An empty window is the empty range 1..0 (FTS5 reads a
		// NULL bound as no bound).
		ranked, err = s.int64s(ctx, `WITH w(id) AS MATERIALIZED (`+windowSQL+`)
			SELECT rowid FROM `+table+`
			WHERE `+table+` MATCH ? AND rowid BETWEEN (SELECT coalesce(min(id), 1) FROM w) AND (SELECT coalesce(max(id), 0) FROM w)
			AND +rowid IN (SELECT id FROM w)
			ORDER BY bm25(`+table+`), rowid DESC LIMIT ?`,
			append(append(windowArgs[:len(windowArgs):len(windowArgs)], rankCandidates, expr), limit)...)
		if err != nil || len(ranked) >= limit {
			return ranked, err
		}
	}
	// Fewer ranked than wanted (a prefix* query whose stem is rarely a
	// word of its own, or no phrase worth ranking): the other candidates
	// follow, newest first.
	window, err := s.int64s(ctx, windowSQL, append(windowArgs, limit+len(ranked))...)
	if err != nil {
		return nil, err
	}
	seen := make(map[int64]bool, len(ranked))
	for _, id := range ranked {
		seen[id] = true
	}
	for _, id := range window {
		if len(ranked) >= limit {
			break
		}
		if !seen[id] {
			ranked = append(ranked, id)
		}
	}
	return ranked, nil
}

// int64s runs a query returning one integer column.
func (s *SQLite) int64s(ctx context.Context, sqlText string, args ...any) ([]int64, error) {
	rows, err := s.stmts.query(ctx, s.db, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
