package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

// A session written before content parts existed (schema version 2, no
// parts column) opens with this build: the database is migrated and its
// messages read back unchanged, with no parts.
func TestOldFormatRowStaysReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`PRAGMA user_version = 2`,
		`INSERT INTO sessions (id, source, model, provider, system_prompt, cwd, started_at, updated_at, message_count, metadata)
			VALUES ('old', 'cli', 'm', 'p', '', '/', 1000, 1000, 2, '{}')`,
		`INSERT INTO messages (session_id, seq, role, content, created_at) VALUES ('old', 1, 'user', 'hello from v2', 1000)`,
		`INSERT INTO messages (session_id, seq, role, content, tool_call_id, tool_name, created_at)
			VALUES ('old', 2, 'tool', 'result', 'c1', 'terminal', 1001)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	st := openTestStore(t, path)
	msgs, err := st.Messages(context.Background(), "old")
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "hello from v2"},
		{Role: llm.RoleTool, Content: "result", ToolCallID: "c1", ToolName: "terminal"},
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("messages = %+v, want %+v", msgs, want)
	}
	if _, err := st.AppendMessage(context.Background(), "old", llm.Message{Role: llm.RoleUser, Content: "new"}); err != nil {
		t.Fatal(err)
	}
}
