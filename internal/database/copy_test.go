package database_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// history fills st with sessions that use every field Copy must carry:
// a title, usage, an end, metadata, a child, tool calls, archived
// messages and the summary that replaced them.
func history(t *testing.T, st store.Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		s, err := st.CreateSession(ctx, store.NewSession{Model: "m", Metadata: json.RawMessage(`{"task":"t"}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		for _, m := range []llm.Message{
			{Role: llm.RoleUser, Content: "check the rollout of payments-api"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "terminal", Arguments: `{"command":"kubectl rollout status"}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: "rolled out"},
			{Role: llm.RoleAssistant, Content: "Done."},
		} {
			if _, err := st.AppendMessage(ctx, s.ID, m); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 0 {
			if _, err := st.ArchiveMessages(ctx, s.ID, 1, 3, llm.Message{Role: llm.RoleUser, Content: "[summary]"}); err != nil {
				t.Fatal(err)
			}
			if err := st.SetTitle(ctx, s.ID, "rollout "+s.ID[16:]); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.AddUsage(ctx, s.ID, llm.Usage{InputTokens: 10 + i, OutputTokens: 2}, 1); err != nil {
			t.Fatal(err)
		}
		if err := st.EndSession(ctx, s.ID, "completed"); err != nil {
			t.Fatal(err)
		}
	}
	child, err := st.CreateSession(ctx, store.NewSession{ParentSessionID: ids[0],
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "sub task"}}})
	if err != nil {
		t.Fatal(err)
	}
	return append(ids, child.ID)
}

// sameHistory checks that two stores hold the same sessions and messages.
func sameHistory(t *testing.T, a, b store.Store, ids []string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		sa, err := a.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.Session(ctx, id)
		if err != nil {
			t.Fatalf("session %s not copied: %v", id, err)
		}
		if !reflect.DeepEqual(sa, sb) {
			t.Fatalf("session %s differs:\n%+v\n%+v", id, sa, sb)
		}
		ma, _ := a.StoredMessages(ctx, id, true)
		mb, _ := b.StoredMessages(ctx, id, true)
		if len(ma) != len(mb) {
			t.Fatalf("session %s: %d vs %d messages", id, len(ma), len(mb))
		}
		for i := range ma {
			ma[i].ID, mb[i].ID = 0, 0 // ids are each database's own
			if !reflect.DeepEqual(ma[i], mb[i]) {
				t.Fatalf("session %s message %d differs:\n%+v\n%+v", id, i, ma[i], mb[i])
			}
		}
	}
}

// A state.db goes to PostgreSQL and back unchanged; a second run copies
// nothing; a run after a partial copy copies only the rest.
func TestCopyRoundTripResumable(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	ctx := context.Background()
	lite, err := store.Open(filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	ids := history(t, lite, 120)
	pg, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := database.Copy(ctx, lite, pg, nil); err != nil {
		t.Fatal(err)
	}
	if err := pg.Delete(ctx, ids[len(ids)-1]); err != nil { // lose the last one, as if stopped before it
		t.Fatal(err)
	}
	rep, err := database.Copy(ctx, lite, pg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != len(ids) || rep.Copied != 1 || rep.Skipped != len(ids)-1 || rep.Messages != 120*4+60+1 {
		t.Fatalf("resumed copy = %+v", rep)
	}
	sameHistory(t, lite, pg, ids)
	if rep, err := database.Copy(ctx, lite, pg, nil); err != nil || rep.Copied != 0 {
		t.Fatalf("second copy = %+v, %v; want nothing copied", rep, err)
	}
	back, err := store.Open(filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if rep, err := database.Copy(ctx, pg, back, nil); err != nil || rep.Copied != len(ids) {
		t.Fatalf("copy back = %+v, %v", rep, err)
	}
	sameHistory(t, lite, back, ids)
	if hits, err := pg.Search(ctx, store.SearchOptions{Query: "kubectl", Limit: 500}); err != nil || len(hits) != 120 {
		t.Fatalf("search of the copy: %d hits, %v", len(hits), err)
	}
}
