package acp

import (
	"context"
	"path/filepath"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// session/list pages through every stored session of the workspace,
// listPageSize at a time, with sessions of other workspaces left out.
func TestListSessionsPaged(t *testing.T) {
	w := newWorld(t)
	st, err := store.Open(filepath.Join(w.home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = listPageSize + 7
	for i := range n + 3 {
		cwd := w.work
		if i >= n {
			cwd = "/elsewhere"
		}
		if _, err := st.CreateSession(ctx, store.NewSession{Source: "cli", Cwd: cwd,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "question"}}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	c := w.connect(sdk.ClientCapabilities{})
	seen := map[sdk.SessionId]bool{}
	var cursor *string
	pages := 0
	for {
		resp, err := c.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: sdk.Ptr(w.work), Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range resp.Sessions {
			if s.Cwd != w.work || s.Title == nil || *s.Title != "question" {
				t.Errorf("listed %+v", s)
			}
			seen[s.SessionId] = true
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = resp.NextCursor
	}
	if len(seen) != n || pages != 2 {
		t.Errorf("listed %d sessions in %d pages, want %d in 2", len(seen), pages, n)
	}
}
