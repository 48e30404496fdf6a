package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

func open(t *testing.T, url, schema string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// An unreachable server is an error naming the host and the variable the
// URL came from; the URL's password appears nowhere in it.
func TestUnreachableServerNamesHostNotPassword(t *testing.T) {
	url := "postgres://hermes:s3cret-pa55word@127.0.0.1:1/hermes?connect_timeout=5"
	_, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, postgres.URLEnv) {
		t.Errorf("error %q does not name the host and %s", msg, postgres.URLEnv)
	}
	if strings.Contains(msg, "s3cret-pa55word") {
		t.Errorf("error shows the password: %q", msg)
	}
	_, err = postgres.Open(context.Background(), postgres.Config{URL: "postgres://u:s3cret-pa55word@[bad", URLSource: "database.url"})
	if err == nil || strings.Contains(err.Error(), "s3cret-pa55word") || !strings.Contains(err.Error(), "database.url") {
		t.Errorf("malformed URL: %v", err)
	}
	if _, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: "Bad-Name"}); err == nil ||
		!strings.Contains(err.Error(), "database.schema") {
		t.Errorf("bad schema name: %v", err)
	}
}

// A schema a newer hermes wrote is refused, and nothing in it changes.
func TestNewerSchemaRefused(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	db := open(t, url, schema)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, "UPDATE "+schema+".schema_version SET version = 999"); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, postgres.Config{URL: url, Schema: schema})
	if err == nil || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), "upgrade hermes") {
		t.Fatalf("Open of a newer schema = %v", err)
	}
	if _, err := db.Session(ctx, s.ID); err != nil {
		t.Fatalf("session after the refusal: %v", err)
	}
}

// Two replicas on one schema see one history, and the turn lock is a
// lease: when the holder's connection dies (its process was killed), the
// other replica takes the session over at once.
func TestTurnLockPassesWhenHolderDies(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	a, b := open(t, url, schema), open(t, url, schema)
	ctx := context.Background()
	s, err := a.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleUser, Content: "from replica b"}); err != nil {
		t.Fatal(err)
	}
	if msgs, err := a.Messages(ctx, s.ID); err != nil || len(msgs) != 1 {
		t.Fatalf("replica a sees %d messages, %v", len(msgs), err)
	}
	if _, err := a.LockSession(ctx, s.ID, "gateway"); err != nil {
		t.Fatal(err)
	}
	_, err = b.LockSession(ctx, s.ID, "gateway")
	var busy *store.BusyError
	if !errors.As(err, &busy) || busy.Owner != "gateway" || busy.PID == 0 {
		t.Fatalf("second replica: %v, want busy naming the holder", err)
	}
	// The holder dies: the server ends its lock connection.
	var holder int
	if err := b.Pool().QueryRow(ctx, `SELECT pid FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND ((classid::bigint << 32) | objid::bigint) = $1::bigint + (hashtext($2)::bigint & 4294967295)`,
		a.LockNamespace(), s.ID).Scan(&holder); err != nil {
		t.Fatalf("find the lock holder: %v", err)
	}
	if _, err := b.Pool().Exec(ctx, "SELECT pg_terminate_backend($1)", holder); err != nil {
		t.Fatal(err)
	}
	// pg_terminate_backend only signals it: wait until it has gone.
	waitfor.Until(t, "the lock holder's backend to exit", func() bool {
		var alive bool
		err := b.Pool().QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", holder).Scan(&alive)
		return err == nil && !alive
	})
	unlock, err := b.LockSession(ctx, s.ID, "gateway")
	if err != nil {
		t.Fatalf("takeover after the holder died: %v", err)
	}
	// The old holder's process lives on (only its lock connection was
	// cut): its turn's next write must not land beside b's turn.
	if _, err := a.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleAssistant, Content: "late write from a"}); !errors.Is(err, postgres.ErrTurnLockLost) {
		t.Fatalf("a write after losing the lock: %v, want ErrTurnLockLost", err)
	}
	if _, err := b.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleUser, Content: "b's turn"}); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	if msgs, err := b.Messages(ctx, s.ID); err != nil || len(msgs) != 2 || msgs[1].Content != "b's turn" {
		t.Fatalf("messages after the takeover: %+v, %v", msgs, err)
	}
	unlock()
}
