package store

// migrations is the schema history of state.db. Entry i brings a database
// from `PRAGMA user_version` i to i+1; each runs in one transaction together
// with the version bump, so a crash mid-migration leaves the previous
// version intact. Never edit a released entry: append a new one.
//
// Design notes (version 1):
//   - Timestamps are INTEGER Unix milliseconds (UTC).
//   - sessions.title is UNIQUE case-insensitively when not NULL (SQLite lets
//     any number of rows hold NULL under a UNIQUE constraint).
//   - messages.seq orders a session's active conversation. Context
//     compression archives a range of rows (active = 0) and puts its summary
//     row at the first archived seq, so seq is unique only among active
//     rows; archived rows stay stored and searchable.
//   - messages_search is a view exposing what is indexed: content, tool
//     names (the result's tool_name or the names of the calls an assistant
//     made) and the raw tool-call arguments. It walks the tool_calls array
//     with a recursive CTE rather than json_each, because FTS5's content
//     integrity check fails on table-valued functions inside the view.
//     Both FTS5 tables are external-content tables over that view, so the
//     text is stored once; the triggers read the same view, so index and
//     content cannot drift.
//   - Nothing here stores request headers, API keys or tokens; a test checks
//     the column names.
var migrations = []string{
	// 1: sessions, messages, full-text indexes.
	`
CREATE TABLE sessions (
	id                 TEXT PRIMARY KEY,
	source             TEXT NOT NULL DEFAULT 'cli',
	model              TEXT NOT NULL DEFAULT '',
	provider           TEXT NOT NULL DEFAULT '',
	title              TEXT COLLATE NOCASE UNIQUE,
	system_prompt      TEXT NOT NULL DEFAULT '',
	cwd                TEXT NOT NULL DEFAULT '',
	started_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL,
	ended_at           INTEGER,
	end_reason         TEXT,
	message_count      INTEGER NOT NULL DEFAULT 0,
	tool_call_count    INTEGER NOT NULL DEFAULT 0,
	input_tokens       INTEGER NOT NULL DEFAULT 0,
	output_tokens      INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
	api_call_count     INTEGER NOT NULL DEFAULT 0,
	parent_session_id  TEXT REFERENCES sessions(id) ON DELETE SET NULL,
	metadata           TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata))
) STRICT;
CREATE INDEX sessions_by_updated ON sessions(updated_at DESC, id DESC);
CREATE INDEX sessions_by_source ON sessions(source, updated_at DESC);
CREATE INDEX sessions_by_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;

CREATE TABLE messages (
	id                  INTEGER PRIMARY KEY,
	session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq                 INTEGER NOT NULL,
	role                TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
	content             TEXT NOT NULL DEFAULT '',
	tool_calls          TEXT CHECK (tool_calls IS NULL OR json_valid(tool_calls)),
	tool_call_id        TEXT,
	tool_name           TEXT,
	is_error            INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
	reasoning           TEXT,
	reasoning_signature TEXT,
	reasoning_details   TEXT CHECK (reasoning_details IS NULL OR json_valid(reasoning_details)),
	redacted_thinking   TEXT CHECK (redacted_thinking IS NULL OR json_valid(redacted_thinking)),
	finish_reason       TEXT,
	created_at          INTEGER NOT NULL,
	token_count         INTEGER,
	active              INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1))
) STRICT;
CREATE INDEX messages_by_session ON messages(session_id, seq);
CREATE UNIQUE INDEX messages_active_seq ON messages(session_id, seq) WHERE active = 1;

CREATE VIEW messages_search(id, content, tool_name, tool_args) AS
SELECT m.id,
       m.content,
       trim(coalesce(m.tool_name, '') || ' ' || coalesce(
           (WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < json_array_length(m.tool_calls))
            SELECT group_concat(json_extract(m.tool_calls, '$[' || i || '].name'), ' ') FROM k
            WHERE m.tool_calls IS NOT NULL), '')),
       coalesce(
           (WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < json_array_length(m.tool_calls))
            SELECT group_concat(json_extract(m.tool_calls, '$[' || i || '].arguments'), ' ') FROM k
            WHERE m.tool_calls IS NOT NULL), '')
FROM messages AS m;

CREATE VIRTUAL TABLE messages_fts USING fts5(
	content, tool_name, tool_args,
	content = 'messages_search', content_rowid = 'id',
	tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_trigram USING fts5(
	content, tool_name, tool_args,
	content = 'messages_search', content_rowid = 'id',
	tokenize = 'trigram'
);

CREATE TRIGGER messages_index_insert AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts(rowid, content, tool_name, tool_args)
		SELECT id, content, tool_name, tool_args FROM messages_search WHERE id = new.id;
	INSERT INTO messages_trigram(rowid, content, tool_name, tool_args)
		SELECT id, content, tool_name, tool_args FROM messages_search WHERE id = new.id;
END;
CREATE TRIGGER messages_index_delete BEFORE DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_args)
		SELECT 'delete', id, content, tool_name, tool_args FROM messages_search WHERE id = old.id;
	INSERT INTO messages_trigram(messages_trigram, rowid, content, tool_name, tool_args)
		SELECT 'delete', id, content, tool_name, tool_args FROM messages_search WHERE id = old.id;
END;
CREATE TRIGGER messages_index_update_before BEFORE UPDATE OF content, tool_name, tool_calls ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_args)
		SELECT 'delete', id, content, tool_name, tool_args FROM messages_search WHERE id = old.id;
	INSERT INTO messages_trigram(messages_trigram, rowid, content, tool_name, tool_args)
		SELECT 'delete', id, content, tool_name, tool_args FROM messages_search WHERE id = old.id;
END;
CREATE TRIGGER messages_index_update_after AFTER UPDATE OF content, tool_name, tool_calls ON messages BEGIN
	INSERT INTO messages_fts(rowid, content, tool_name, tool_args)
		SELECT id, content, tool_name, tool_args FROM messages_search WHERE id = new.id;
	INSERT INTO messages_trigram(rowid, content, tool_name, tool_args)
		SELECT id, content, tool_name, tool_args FROM messages_search WHERE id = new.id;
END;
`,
	// 2: per-session turn locks (see lock.go). No foreign key: a session is
	// locked before its row exists (the row is written with its first
	// message).
	`
CREATE TABLE session_locks (
	session_id  TEXT PRIMARY KEY,
	owner       TEXT NOT NULL,
	token       TEXT NOT NULL,
	pid         INTEGER NOT NULL,
	pid_start   INTEGER NOT NULL,
	boot_id     TEXT NOT NULL,
	acquired_at INTEGER NOT NULL
) STRICT;
`,
	// 3: content parts (images) beyond the text. NULL for text-only
	// messages, so rows written before version 3 read as they were.
	`ALTER TABLE messages ADD COLUMN parts TEXT CHECK (parts IS NULL OR json_valid(parts));`,
	// 4: which model and provider wrote an assistant message (a fallback
	// provider answers with another model than the session's). NULL for
	// other roles and rows written before version 4.
	`ALTER TABLE messages ADD COLUMN model TEXT;
ALTER TABLE messages ADD COLUMN provider TEXT;`,
}
