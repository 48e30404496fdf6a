package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
)

// Sort orders search hits.
type Sort string

// Search orders. Relevance is FTS5's bm25 rank over all the query's
// matches when it has at most rankCandidates of them (the newest
// rankCandidates otherwise), over the query's phrases that are not in a
// large share of the messages (so that common words stay fast; see
// rank.go); substring and CJK matches,
// where bm25 over trigrams means little, come newest first. Newest and
// oldest follow message order.
const (
	SortRelevance Sort = "relevance"
	SortNewest    Sort = "newest"
	SortOldest    Sort = "oldest"
)

// ParseSort accepts relevance, newest, oldest or "" (relevance).
func ParseSort(s string) (Sort, error) {
	switch Sort(strings.ToLower(strings.TrimSpace(s))) {
	case "", SortRelevance:
		return SortRelevance, nil
	case SortNewest:
		return SortNewest, nil
	case SortOldest:
		return SortOldest, nil
	}
	return "", fmt.Errorf("sort %q is not one of relevance, newest, oldest", s)
}

// SearchOptions selects messages for Search.
type SearchOptions struct {
	// Query uses SQLite FTS5 syntax: words (all must match), "exact phrase",
	// OR, NOT, AND, prefix*, NEAR(a b, 5), and column filters content:,
	// tool_name:, tool_args:. Words are matched after Porter stemming.
	Query     string
	Limit     int    // ≤ 0 means 10
	SessionID string // only this session, when set
	Sort      Sort   // "" means relevance
	Roles     []string
	// Highlight is the text put before and after each match in
	// Hit.Snippet; the zero value means "**" and "**" (Markdown bold).
	Highlight [2]string
}

// Hit is one matching message.
type Hit struct {
	MessageID int64
	SessionID string
	Title     string // session title, "" when untitled
	Seq       int64
	Role      llm.Role
	ToolName  string
	Date      time.Time // when the message was written (UTC)
	// Snippet is an excerpt around the match with matches marked **like
	// this** (or with SearchOptions.Highlight): about 16 words for word
	// matches, 60 characters either side for substring and scan matches.
	Snippet string
	Active  bool // false for messages archived by context compression
	// Index tells which matcher found the hit: "fts" (words), "trigram"
	// (substrings, CJK) or "scan" (queries shorter than 3 characters).
	Index string
}

// QueryError reports a search query that is not valid FTS5 syntax.
type QueryError struct {
	Query  string
	Reason string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("search query %q is not valid FTS5 syntax (%s); put literal text such as file names in double quotes "+
		`(e.g. "config.yaml"), and combine words with AND, OR, NOT, "exact phrases" and prefix*`, e.Query, e.Reason)
}

const snippetTokens = 16

// SearchTimeout bounds one Search: SQLite is interrupted when it passes,
// so a pathological query (a two-letter prefix over a million messages)
// cannot hold the caller for seconds.
const SearchTimeout = 3 * time.Second

// SlowQueryError reports a search stopped after SearchTimeout.
type SlowQueryError struct {
	Query string
	After time.Duration
}

func (e *SlowQueryError) Error() string {
	return fmt.Sprintf("search query %q took longer than %s and was stopped; use rarer words, a longer prefix* or an \"exact phrase\"",
		e.Query, e.After)
}

// Search finds messages matching o.Query in all sessions (or one),
// archived messages included. Words go through the FTS5 word index first;
// when it finds nothing, or the query holds CJK text, the trigram index
// matches substrings (hits newest first); plain queries with a word
// shorter than three characters, which trigrams cannot match, fall back to
// a scan of message text, newest first. Words holding punctuation
// (payments-api, config.yaml) are matched as phrases. Malformed FTS5
// syntax returns a *QueryError, a search stopped after SearchTimeout a
// *SlowQueryError.
func (s *SQLite) Search(ctx context.Context, o SearchOptions) ([]Hit, error) {
	q, o, err := CheckSearch(o)
	if err != nil {
		return nil, err
	}

	timeout := SearchTimeout
	if s.searchTimeout != 0 {
		timeout = s.searchTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hits, err := s.search(sctx, q, o)
	if err != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return nil, &SlowQueryError{Query: q, After: timeout}
	}
	return hits, err
}

// CheckSearch checks and completes o for a Store's Search: it returns the
// query to run (trimmed; a NUL byte, which ends FTS5's reading of it,
// separates words like a space) and o with its defaults (limit 10,
// relevance) and lower-case roles; an empty query, an unknown sort or role
// is an error.
func CheckSearch(o SearchOptions) (string, SearchOptions, error) {
	q := strings.TrimSpace(strings.ReplaceAll(o.Query, "\x00", " "))
	if q == "" {
		return "", o, fmt.Errorf("empty search query")
	}
	if o.Limit <= 0 {
		o.Limit = 10
	}
	sort, err := ParseSort(string(o.Sort))
	if err != nil {
		return "", o, err
	}
	o.Sort = sort
	var roles []string
	for _, r := range o.Roles {
		r = strings.ToLower(strings.TrimSpace(r))
		switch llm.Role(r) {
		case "":
		case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool:
			roles = append(roles, r)
		default:
			return "", o, fmt.Errorf("role %q is not one of user, assistant, tool, system", r)
		}
	}
	o.Roles = roles
	return q, o, nil
}

// search is Search after its options are checked.
func (s *SQLite) search(ctx context.Context, q string, o SearchOptions) ([]Hit, error) {
	match := quoteBarewords(q)
	if !hasCJK(q) {
		hits, err := s.searchIndex(ctx, "messages_fts", q, match, o)
		if err != nil || len(hits) > 0 {
			return hits, err
		}
	}
	if ids, ok := s.phraseCandidates(ctx, q); ok {
		if len(ids) == 0 {
			return nil, nil
		}
		if len(ids) <= phraseCheckMax && isASCII(q) {
			return s.searchPhraseIn(ctx, q[1:len(q)-1], ids, o)
		}
	}
	hits, err := s.searchIndex(ctx, "messages_trigram", q, match, o)
	if err != nil || len(hits) > 0 {
		return hits, err
	}
	if isPlainText(q) && hasShortWord(q) {
		return s.searchScan(ctx, q, o)
	}
	return nil, nil
}

// rankCandidates bounds relevance ranking (rank.go): bm25 scores every
// match of a query that has at most rankCandidates of them, so the word
// index's match list is the candidate set and the order is exact over the
// whole history; a broader query, whose every phrase is in thousands of
// messages, ranks its newest rankCandidates matches. bm25 costs about
// 2-3 µs a row here, so the bound keeps a search within tens of
// milliseconds whatever the store's size.
const rankCandidates = 2000

func (s *SQLite) searchIndex(ctx context.Context, table, query, match string, o SearchOptions) ([]Hit, error) {
	index := "fts"
	if table == "messages_trigram" {
		index = "trigram"
	}
	where, wargs := filterClause(o)
	if index == "trigram" && o.Sort == SortRelevance {
		o.Sort = SortNewest
	}
	var ids []int64
	if o.Sort == SortRelevance {
		// Phase 1 of relevance: rank the candidates, keep the best ids.
		var err error
		ids, err = s.rankedIDs(ctx, table, match, o, o.Limit)
		if err != nil {
			if isQuerySyntaxError(err) {
				return nil, &QueryError{Query: query, Reason: sqliteReason(err)}
			}
			return nil, err
		}
		if len(ids) == 0 {
			return nil, nil
		}
	}
	open, close := o.marks()
	// FTS5 snippets count tokens; over trigrams 16 tokens are ~18
	// characters, too little to read, so substring hits get the message
	// text and are cut around the match here.
	excerptColumn := `snippet(` + table + `, -1, ?, ?, '…', ` + fmt.Sprint(snippetTokens) + `)`
	args := []any{open, close}
	if index == "trigram" {
		excerptColumn, args = "m.content", nil
	}
	sqlText := `SELECT m.id, m.session_id, coalesce(s.title, ''), m.seq, m.role, coalesce(m.tool_name, ''),
		m.created_at, m.active, ` + excerptColumn + `
		FROM ` + table + `
		JOIN messages AS m ON m.id = ` + table + `.rowid
		JOIN sessions AS s ON s.id = m.session_id
		WHERE ` + table + ` MATCH ?`
	args = append(args, match)
	var hits []Hit
	var err error
	switch {
	case ids != nil && s.lookupEach(ctx, match, ids):
		hits, err = s.hitsByID(ctx, sqlText+" AND "+table+".rowid = ?", args, ids, index)
	case ids != nil:
		// One pass over the ids' range; the unary + keeps the IN list a
		// filter instead of an index probe.
		lo, hi := slices.Min(ids), slices.Max(ids)
		sqlText += " AND " + table + ".rowid BETWEEN ? AND ? AND +" + table + ".rowid IN (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		args = append(args, lo, hi)
		for _, id := range ids {
			args = append(args, id)
		}
		hits, err = s.queryHits(ctx, sqlText, args, index)
	default:
		rwhere, rargs := sessionRange(table, o)
		sqlText += where + rwhere
		args = append(append(args, wargs...), rargs...)
		if o.Sort == SortOldest {
			sqlText += " ORDER BY " + table + ".rowid ASC"
		} else {
			sqlText += " ORDER BY " + table + ".rowid DESC"
		}
		sqlText += " LIMIT ?"
		args = append(args, o.Limit)
		hits, err = s.queryHits(ctx, sqlText, args, index)
	}
	if err != nil {
		if isQuerySyntaxError(err) {
			return nil, &QueryError{Query: query, Reason: sqliteReason(err)}
		}
		return nil, err
	}
	if index == "trigram" {
		terms := queryTerms(query)
		for i := range hits {
			hits[i].Snippet = excerpt(hits[i].Snippet, terms, open, close)
		}
	}
	for i := range hits {
		hits[i].Snippet = capSnippet(hits[i].Snippet, open, MaxSnippetChars)
	}
	if ids != nil { // phase 2 fetched snippets in rowid order; restore rank order
		pos := make(map[int64]int, len(ids))
		for i, id := range ids {
			pos[id] = i
		}
		slices.SortFunc(hits, func(a, b Hit) int { return pos[a.MessageID] - pos[b.MessageID] })
	}
	return hits, nil
}

// phraseCheckMax bounds the messages whose text is checked for a quoted
// phrase directly (see phraseCandidates) instead of through the trigram
// index.
const phraseCheckMax = 500

// phraseCandidates returns, when q is one quoted phrase of three or more
// words, the ids of the messages that can hold it as a substring (at most
// phraseCheckMax+1 of them, newest first); ok is false for other queries
// and on error (the trigram search then reports it). Such a substring
// holds the middle words whole, followed by a word starting with the last
// word (whose stemmed form starts with at least its first three letters),
// so the word index finds every message that can hold it. The trigram
// search of a long phrase walks a list per three characters, which for
// common ones took a tenth of a second, also to find nothing.
func (s *SQLite) phraseCandidates(ctx context.Context, q string) (ids []int64, ok bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' || strings.Count(q, `"`) != 2 {
		return nil, false
	}
	words := strings.Fields(q[1 : len(q)-1])
	if len(words) < 3 {
		return nil, false
	}
	last := []rune(words[len(words)-1])
	if len(last) > 3 {
		last = last[:3]
	}
	phrase := strings.Join(append(words[1:len(words)-1:len(words)-1], string(last)), " ")
	ids, err := s.int64s(ctx, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?`,
		`"`+phrase+`"*`, phraseCheckMax+1)
	return ids, err == nil
}

// searchPhraseIn matches phrase as a substring of the indexed text
// (content, tool names, tool arguments) of the messages ids, newest first
// (oldest first for SortOldest), with the trigram index's meaning: case is
// ignored, which LIKE does for ASCII only, so the phrase must be ASCII.
func (s *SQLite) searchPhraseIn(ctx context.Context, phrase string, ids []int64, o SearchOptions) ([]Hit, error) {
	list, _ := json.Marshal(ids)
	like := "%" + escapeLike(phrase) + "%"
	sqlText := `SELECT m.id, m.session_id, coalesce(s.title, ''), m.seq, m.role, coalesce(m.tool_name, ''),
		m.created_at, m.active, m.content
		FROM messages_search AS v JOIN messages AS m ON m.id = v.id JOIN sessions AS s ON s.id = m.session_id
		WHERE v.id IN (SELECT value FROM json_each(?))
		AND (v.content LIKE ? ESCAPE '\' OR v.tool_name LIKE ? ESCAPE '\' OR v.tool_args LIKE ? ESCAPE '\')`
	args := []any{string(list), like, like, like}
	sqlText, args = filteredNewestFirst(sqlText, args, o)
	hits, err := s.queryHits(ctx, sqlText, args, "trigram")
	open, close := o.marks()
	for i := range hits {
		hits[i].Snippet = capSnippet(excerpt(hits[i].Snippet, []string{phrase}, open, close), open, MaxSnippetChars)
	}
	return hits, err
}

// filteredNewestFirst completes a hit query over messages m: o's
// filters, its order by id (newest first unless SortOldest) and its limit.
func filteredNewestFirst(sqlText string, args []any, o SearchOptions) (string, []any) {
	where, wargs := filterClause(o)
	sqlText += where
	args = append(args, wargs...)
	if o.Sort == SortOldest {
		sqlText += " ORDER BY m.id ASC"
	} else {
		sqlText += " ORDER BY m.id DESC"
	}
	return sqlText + " LIMIT ?", append(args, o.Limit)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// scanWindow bounds the literal scan to the newest scanWindow messages
// (by id): a scan of a million messages for a query that matches nothing
// took a third of a second.
const scanWindow = 50000

// searchScan matches q as a literal substring of message content, newest
// first, among the newest scanWindow messages (all of a session's when
// o.SessionID is set), for queries too short for the trigram index.
func (s *SQLite) searchScan(ctx context.Context, q string, o SearchOptions) ([]Hit, error) {
	sqlText := `SELECT m.id, m.session_id, coalesce(s.title, ''), m.seq, m.role, coalesce(m.tool_name, ''),
		m.created_at, m.active, m.content
		FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
		WHERE m.id > coalesce((SELECT max(id) FROM messages), 0) - ?
		AND m.content LIKE '%' || ? || '%' ESCAPE '\'`
	window := int64(scanWindow)
	if s.scanLimit != 0 {
		window = s.scanLimit
	}
	if o.SessionID != "" {
		window = 1 << 62 // one session's messages are found through its index
	}
	args := []any{window, escapeLike(q)}
	sqlText, args = filteredNewestFirst(sqlText, args, o)
	hits, err := s.queryHits(ctx, sqlText, args, "scan")
	open, close := o.marks()
	for i := range hits {
		hits[i].Snippet = excerpt(hits[i].Snippet, []string{q}, open, close)
	}
	return hits, err
}

// marks returns the Highlight markers, "**" by default.
func (o SearchOptions) marks() (open, close string) {
	if o.Highlight == [2]string{} {
		return "**", "**"
	}
	return o.Highlight[0], o.Highlight[1]
}

func filterClause(o SearchOptions) (string, []any) {
	var b strings.Builder
	var args []any
	if o.SessionID != "" {
		b.WriteString(" AND m.session_id = ?")
		args = append(args, o.SessionID)
	}
	if len(o.Roles) > 0 {
		b.WriteString(" AND m.role IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(o.Roles)), ", ") + ")")
		for _, r := range o.Roles {
			args = append(args, r)
		}
	}
	return b.String(), args
}

// lookupEach reports whether the ranked ids of match are better fetched
// one by one (FTS5 seeks each phrase's match list to the row, 0.2-1 ms a
// row) than in one pass over their rowid range (a walk of the match list
// between them, which for the best matches of the whole history is all of
// it). A prefix* query expands its prefix again on every lookup, and a few
// ids in the newest twentieth of the history are a short walk.
func (s *SQLite) lookupEach(ctx context.Context, match string, ids []int64) bool {
	if strings.Contains(match, "*") || len(ids) > 10 {
		return false
	}
	first, last, err := s.idSpan(ctx)
	if err != nil {
		return false
	}
	return (slices.Max(ids)-slices.Min(ids))*20 > last-first+1
}

// idSpan returns the smallest and largest message id, 0 and 0 when there
// are no messages.
func (s *SQLite) idSpan(ctx context.Context) (first, last int64, err error) {
	// Two subqueries: min and max in one SELECT would scan the table.
	err = s.stmts.queryRow(ctx, s.db, "SELECT coalesce((SELECT min(id) FROM messages), 0), coalesce((SELECT max(id) FROM messages), 0)").
		Scan(&first, &last)
	return first, last, err
}

// hitsByID runs sqlText, which ends in "rowid = ?", once per id, in the
// order of ids.
func (s *SQLite) hitsByID(ctx context.Context, sqlText string, args []any, ids []int64, index string) ([]Hit, error) {
	var hits []Hit
	for _, id := range ids {
		h, err := s.queryHits(ctx, sqlText, append(args[:len(args):len(args)], id), index)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h...)
	}
	return hits, nil
}

func (s *SQLite) queryHits(ctx context.Context, sqlText string, args []any, index string) ([]Hit, error) {
	rows, err := s.stmts.query(ctx, s.db, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var role string
		var created int64
		var active int
		if err := rows.Scan(&h.MessageID, &h.SessionID, &h.Title, &h.Seq, &role, &h.ToolName, &created, &active,
			&h.Snippet); err != nil {
			return nil, err
		}
		h.Role, h.Date, h.Active, h.Index = llm.Role(role), fromMillis(created), active == 1, index
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

func isQuerySyntaxError(err error) bool {
	msg := err.Error()
	for _, marker := range []string{"fts5", "no such column", "unterminated string", "syntax error", "unknown special query"} {
		if strings.Contains(msg, marker) {
			return true
		}
	}
	return false
}

// sqliteReason strips the driver's decoration ("SQL logic error: … (1)").
func sqliteReason(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "SQL logic error: ")
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	return msg
}

// quoteBarewords puts double quotes around words FTS5 would misread:
// those holding punctuation, such as payments-api, config.yaml or
// 10.0.0.1 (FTS5 reads "-" and "." as syntax). The result matches them as
// phrases of their parts. Quoted text, operators, parentheses, prefix
// stars and column filters (tool_name:terminal) are left as typed.
func quoteBarewords(q string) string {
	var b strings.Builder
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				b.WriteString(q[i:]) // unterminated: FTS5 reports it
				return b.String()
			}
			b.WriteString(q[i : i+end+2])
			i += end + 2
		case c == ' ' || c == '\t' || c == '\n' || c == '(' || c == ')':
			b.WriteByte(c)
			i++
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\n()\"", rune(q[j])) {
				j++
			}
			b.WriteString(quoteWord(q[i:j]))
			i = j
		}
	}
	return b.String()
}

func quoteWord(w string) string {
	prefix := ""
	if k := strings.IndexByte(w, ':'); k > 0 && isBareword(w[:k]) {
		prefix, w = w[:k+1], w[k+1:] // column filter
	}
	star := ""
	if strings.HasSuffix(w, "*") {
		star, w = "*", strings.TrimSuffix(w, "*")
	}
	if w == "" || isBareword(w) || strings.HasPrefix(w, "^") || strings.HasPrefix(w, "+") {
		return prefix + w + star
	}
	return prefix + `"` + w + `"` + star
}

// isBareword reports whether FTS5 reads w as one bareword: letters,
// digits, underscore and any non-ASCII character.
func isBareword(w string) bool {
	for _, r := range w {
		if !(r >= 0x80 || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}

// isPlainText reports whether q uses no FTS5 operators, so it can be
// matched literally.
func isPlainText(q string) bool {
	if strings.ContainsAny(q, `"*():^+{}`) {
		return false
	}
	for _, w := range strings.Fields(q) {
		switch w {
		case "AND", "OR", "NOT", "NEAR":
			return false
		}
	}
	return true
}

func hasShortWord(q string) bool {
	for _, w := range strings.Fields(q) {
		if utf8.RuneCountInString(w) < 3 {
			return true
		}
	}
	return false
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// queryTerms returns the literal texts a query looks for: quoted phrases
// and words, without FTS5 operators (AND, OR, NOT, NEAR), column filters
// (content:), prefix stars and ^/+ markers.
func queryTerms(q string) []string {
	var out []string
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				end = len(q) - i - 1
			}
			if t := q[i+1 : i+1+end]; strings.TrimSpace(t) != "" {
				out = append(out, t)
			}
			i += end + 2
		case strings.IndexByte(" \t\n(),", c) >= 0:
			i++
		default:
			j := i
			for j < len(q) && strings.IndexByte(" \t\n()\",", q[j]) < 0 {
				j++
			}
			w := q[i:j]
			i = j
			switch w {
			case "AND", "OR", "NOT", "NEAR":
				continue
			}
			if k := strings.IndexByte(w, ':'); k > 0 && isBareword(w[:k]) {
				w = w[k+1:]
			}
			if w = strings.TrimSuffix(strings.TrimLeft(w, "^+"), "*"); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// MaxSnippetChars bounds a search hit's snippet, in characters: FTS5 cuts
// snippets by tokens, and one token (base64, minified JSON, a long path)
// can be kilobytes long.
const MaxSnippetChars = 300

// capSnippet cuts a snippet longer than limit characters to limit
// characters around the first match marker open (or its start), marking
// the cut ends with "…". A marker pair cut in half leaves the text
// readable; the close marker is kept when it falls inside.
func capSnippet(snip, open string, limit int) string {
	rc := []rune(snip)
	if len(rc) <= limit {
		return snip
	}
	at := 0
	if i := strings.Index(snip, open); open != "" && i >= 0 {
		at = len([]rune(snip[:i]))
	}
	start := max(0, min(at-limit/3, len(rc)-limit))
	end := start + limit
	out := string(rc[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(rc) {
		out += "…"
	}
	return out
}

// excerptContext is how many characters of text a snippet keeps on each
// side of the first match.
const excerptContext = 60

// excerpt cuts content to excerptContext characters either side of the
// first case-insensitive occurrence of any term, puts open and close
// around every occurrence inside the cut, marks the cut ends with "…" and
// folds whitespace runs to one space. Without an occurrence it returns the
// start of content.
func excerpt(content string, terms []string, open, close string) string {
	rc := []rune(content)
	var rterms [][]rune
	for _, t := range terms {
		if t != "" {
			rterms = append(rterms, []rune(t))
		}
	}
	// matchAt returns the length of the longest term at rc[i:], or 0.
	matchAt := func(i int) int {
		best := 0
		for _, t := range rterms {
			if len(t) > best && i+len(t) <= len(rc) && equalFoldRunes(rc[i:i+len(t)], t) {
				best = len(t)
			}
		}
		return best
	}
	first, firstLen := -1, 0
	for i := range rc {
		if n := matchAt(i); n > 0 {
			first, firstLen = i, n
			break
		}
	}
	if first < 0 {
		if len(rc) > 2*excerptContext {
			return strings.Join(strings.Fields(string(rc[:2*excerptContext])), " ") + "…"
		}
		return strings.Join(strings.Fields(content), " ")
	}
	start, end := max(0, first-excerptContext), min(len(rc), first+firstLen+excerptContext)
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; i < end; {
		if n := matchAt(i); n > 0 {
			b.WriteString(open + string(rc[i:i+n]) + close)
			i += n
			end = max(end, i)
			continue
		}
		b.WriteRune(rc[i])
		i++
	}
	if end < len(rc) {
		b.WriteString("…")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// equalFoldRunes reports whether a and b (of equal length) are equal under
// Unicode simple case folding.
func equalFoldRunes(a, b []rune) bool {
	for i := range a {
		if a[i] != b[i] && unicode.ToLower(a[i]) != unicode.ToLower(b[i]) && unicode.ToUpper(a[i]) != unicode.ToUpper(b[i]) {
			return false
		}
	}
	return true
}
