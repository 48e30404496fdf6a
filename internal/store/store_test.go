package store

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// testClock is a clock that moves one second forward on every reading.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func openTestStore(t *testing.T, path string) *SQLite {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), FileName)
	}
	clock := &testClock{t: time.Date(2026, 11, 30, 14, 55, 0, 0, time.UTC)}
	st, err := Open(path, WithClock(clock.Now), WithRandom(rand.NewChaCha8([32]byte{1})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func mustCreate(t *testing.T, st *SQLite, ns NewSession) Session {
	t.Helper()
	s, err := st.CreateSession(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAppend(t *testing.T, st *SQLite, id string, msgs ...llm.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := st.AppendMessage(context.Background(), id, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not sqlite ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk); err == nil || !strings.Contains(err.Error(), junk) || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("Open(junk) = %v", err)
	}
	newer := filepath.Join(dir, FileName)
	st := openTestStore(t, newer)
	if _, err := st.db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Open(newer); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open(newer schema) = %v", err)
	}
}

func TestDatabaseFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my home #1 %20", FileName)
	st := openTestStore(t, path)
	mustCreate(t, st, NewSession{})
	for _, p := range []string{path, path + "-wal", filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s mode %v is readable by others", p, fi.Mode().Perm())
		}
	}
}

// The store never receives credentials, and the schema has nowhere to put
// request headers or keys should a caller try.
func TestSchemaHasNoPlaceForSecrets(t *testing.T) {
	st := openTestStore(t, "")
	forbidden := regexp.MustCompile(`(?i)header|authori[sz]ation|api_?key|secret|password|passwd|credential|bearer|cookie|auth_token|access_token|refresh_token`)
	rows, err := st.db.Query(`SELECT m.name, p.name FROM sqlite_schema AS m, pragma_table_info(m.name) AS p
		WHERE m.type IN ('table', 'view')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	columns := 0
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		columns++
		if forbidden.MatchString(table) || forbidden.MatchString(column) {
			t.Errorf("%s.%s looks like it stores credentials or request headers", table, column)
		}
	}
	if columns < 30 {
		t.Fatalf("only %d columns inspected; the schema query is broken", columns)
	}
}
