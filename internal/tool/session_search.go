package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// Limits of the session_search tool's output.
const (
	sessionSearchDefaultLimit = 5    // hits per query (Hermes default)
	sessionSearchMaxLimit     = 50   // hits per query, at most
	sessionReadMessageRunes   = 1500 // per message when reading a session
	sessionReadTotalRunes     = 24000
)

// sessionSearch is the session_search tool ("tools-reference.md",
// toolset session_search): full-text search over past sessions without a
// model call. Shapes, as in Hermes:
//   - query: search all sessions (or one, with session_id) and return
//     snippets with session id, title and date;
//   - session_id alone: read that session's conversation;
//   - no arguments: list the most recent sessions.
type sessionSearch struct {
	st store.Store
}

// NewSessionSearch returns the session_search tool reading st.
func NewSessionSearch(st store.Store) Tool { return &sessionSearch{st: st} }

func (t *sessionSearch) Toolset() string { return "session_search" }

func (t *sessionSearch) Parallel() bool { return true }

func (t *sessionSearch) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "session_search",
		Description: "Search past conversations (all sessions, including earlier parts of this one) for what was said, " +
			"decided or run. `query` uses SQLite FTS5 syntax: words (all must match; word forms are stemmed), " +
			"\"exact phrase\", OR, NOT, prefix*, and column filters tool_name:terminal or tool_args:kubectl. " +
			"Substrings and Chinese/Japanese/Korean text also match. Put file names and other text with punctuation " +
			"in double quotes. Returns snippets with session_id, title and date; pass session_id alone to read " +
			"that session, or no arguments to list recent sessions.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "FTS5 query, e.g. deploy AND \"payments-api\" or migrat*"},
    "limit": {"type": "integer", "description": "maximum results (default 5, at most 50)"},
    "session_id": {"type": "string", "description": "a session id, id prefix or title: read it, or search only it when query is set"},
    "sort": {"type": "string", "enum": ["relevance", "newest", "oldest"], "description": "order of results (default relevance)"},
    "role_filter": {"type": "string", "description": "comma-separated roles to search: user, assistant, tool (default user,assistant)"}
  }
}`),
	}
}

type sessionSearchArgs struct {
	Query      string          `json:"query"`
	Limit      int             `json:"limit"`
	SessionID  string          `json:"session_id"`
	Sort       string          `json:"sort"`
	RoleFilter json.RawMessage `json:"role_filter"` // "user,tool" or ["user","tool"]
}

// sessionHit is one search result as the model sees it.
type sessionHit struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title,omitempty"`
	Date      string `json:"date"`
	Role      string `json:"role"`
	ToolName  string `json:"tool_name,omitempty"`
	Seq       int64  `json:"seq"`
	Snippet   string `json:"snippet"`
	Archived  bool   `json:"archived,omitempty"`
}

func (t *sessionSearch) Run(ctx context.Context, call Call) Result {
	var a sessionSearchArgs
	if err := Decode(call.Args, &a); err != nil {
		return Errorf("%v", err)
	}
	a.Query, a.SessionID = strings.TrimSpace(a.Query), strings.TrimSpace(a.SessionID)
	if a.Limit <= 0 {
		a.Limit = sessionSearchDefaultLimit
	}
	a.Limit = min(a.Limit, sessionSearchMaxLimit)
	sort, err := store.ParseSort(a.Sort)
	if err != nil {
		return Errorf("%v", err)
	}
	roles, err := parseRoleFilter(a.RoleFilter)
	if err != nil {
		return Errorf("%v", err)
	}
	var session store.Session
	if a.SessionID != "" {
		if session, err = t.st.Resolve(ctx, a.SessionID); err != nil {
			return Errorf("session_id: %v", err)
		}
	}
	switch {
	case a.Query != "":
		return t.search(ctx, a, session.ID, sort, roles)
	case session.ID != "":
		return t.read(ctx, session)
	default:
		return t.browse(ctx, a.Limit)
	}
}

func parseRoleFilter(raw json.RawMessage) ([]string, error) {
	var roles []string
	if len(raw) > 0 && string(raw) != "null" {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			roles = strings.Split(s, ",")
		} else if err := json.Unmarshal(raw, &roles); err != nil {
			return nil, fmt.Errorf("role_filter must be a string like \"user,assistant\"")
		}
	}
	var out []string
	for _, r := range roles {
		if r = strings.ToLower(strings.TrimSpace(r)); r != "" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		out = []string{"user", "assistant"}
	}
	return out, nil
}

func (t *sessionSearch) search(ctx context.Context, a sessionSearchArgs, sessionID string, sort store.Sort, roles []string) Result {
	hits, err := t.st.Search(ctx, store.SearchOptions{Query: a.Query, Limit: a.Limit, SessionID: sessionID, Sort: sort, Roles: roles})
	var qe *store.QueryError
	var se *store.SlowQueryError
	if errors.As(err, &qe) || errors.As(err, &se) {
		return Errorf("%v", err)
	}
	if err != nil {
		return Errorf("session search failed: %v", err)
	}
	out := make([]sessionHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, sessionHit{SessionID: h.SessionID, Title: h.Title, Date: sessionDate(h.Date),
			Role: string(h.Role), ToolName: h.ToolName, Seq: h.Seq, Snippet: h.Snippet, Archived: !h.Active})
	}
	res := map[string]any{"query": a.Query, "count": len(out), "results": out}
	if len(out) == 0 {
		res["note"] = "no matches; try fewer or broader words, prefix*, OR, or role_filter \"user,assistant,tool\""
	}
	return JSON(res)
}

type readMessage struct {
	Seq       int64    `json:"seq"`
	Role      string   `json:"role"`
	Content   string   `json:"content,omitempty"`
	ToolCalls []string `json:"tool_calls,omitempty"` // name(arguments), shortened
	ToolName  string   `json:"tool_name,omitempty"`
	Date      string   `json:"date"`
}

func (t *sessionSearch) read(ctx context.Context, s store.Session) Result {
	msgs, err := t.st.StoredMessages(ctx, s.ID, false)
	if err != nil {
		return Errorf("reading session %s: %v", s.ID, err)
	}
	// Keep the end of long sessions: walk back from the newest message until
	// the budget is spent.
	budget, first := sessionReadTotalRunes, len(msgs)
	out := make([]readMessage, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		rm := readMessage{Seq: m.Seq, Role: string(m.Role), Content: shortenSessionText(m.Content, sessionReadMessageRunes),
			ToolName: m.ToolName, Date: sessionDate(m.CreatedAt)}
		for _, c := range m.ToolCalls {
			rm.ToolCalls = append(rm.ToolCalls, c.Name+"("+shortenSessionText(c.Arguments, 200)+")")
		}
		cost := utf8.RuneCountInString(rm.Content) + 50
		for _, c := range rm.ToolCalls {
			cost += utf8.RuneCountInString(c)
		}
		if cost > budget && first < len(msgs) {
			break
		}
		budget -= cost
		out[i], first = rm, i
	}
	res := map[string]any{"session_id": s.ID, "title": s.Title, "date": sessionDate(s.StartedAt),
		"model": s.Model, "message_count": len(msgs), "messages": out[first:]}
	if first > 0 {
		res["omitted"] = fmt.Sprintf("the first %d messages are not shown; search with session_id and a query to find them", first)
	}
	return JSON(res)
}

type browseSession struct {
	SessionID    string `json:"session_id"`
	Title        string `json:"title,omitempty"`
	Date         string `json:"date"`
	Source       string `json:"source"`
	MessageCount int    `json:"message_count"`
	Preview      string `json:"preview,omitempty"`
}

func (t *sessionSearch) browse(ctx context.Context, limit int) Result {
	list, err := t.st.List(ctx, store.ListOptions{Limit: limit})
	if err != nil {
		return Errorf("listing sessions: %v", err)
	}
	out := make([]browseSession, 0, len(list))
	for _, s := range list {
		out = append(out, browseSession{SessionID: s.ID, Title: s.Title, Date: sessionDate(s.UpdatedAt),
			Source: s.Source, MessageCount: s.MessageCount, Preview: shortenSessionText(s.Preview, 100)})
	}
	return JSON(map[string]any{"recent_sessions": out})
}

func sessionDate(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// shorten cuts s to at most n runes, marking the cut.
func shortenSessionText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("… [%d more characters]", len(r)-n)
}
