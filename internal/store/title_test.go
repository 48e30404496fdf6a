package store

import (
	"context"
	"strings"
	"testing"
)

// A title that looks like a session id would make `--resume REF` and
// `sessions rename` ambiguous (Resolve tries ids, then titles), so it is
// refused with an error that says why; nothing is changed.
func TestSetTitleRefusesIDLikeTitles(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	a := mustCreate(t, st, NewSession{})
	b := mustCreate(t, st, NewSession{})
	if err := st.SetTitle(ctx, b.ID, "kept"); err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{
		a.ID,                     // another session's id
		b.ID,                     // its own id
		strings.ToUpper(a.ID),    // ids resolve case-insensitively through titles
		"20991231_235959_abcdef", // the id shape, no such session
		"20991231_235959",        // an id prefix of that shape
		"20991231_235959_ab",
		" 20991231_235959_abcdef ", // cleaned first
	} {
		err := st.SetTitle(ctx, b.ID, title)
		if err == nil || !strings.Contains(err.Error(), "looks like a session id") {
			t.Errorf("SetTitle(%q) = %v, want a refusal", title, err)
		}
	}
	if got, _ := st.Session(ctx, b.ID); got.Title != "kept" {
		t.Fatalf("a refused title changed the session: %q", got.Title)
	}
	// Titles that merely contain digits or dates stay allowed.
	for _, title := range []string{"2026 planning", "20261130", "incident 20261130_145500", "release_2026_11"} {
		if err := st.SetTitle(ctx, b.ID, title); err != nil {
			t.Errorf("SetTitle(%q) = %v", title, err)
		}
	}
	if _, err := st.Import(ctx, []ImportedSession{{Title: a.ID}}); err == nil || !strings.Contains(err.Error(), "looks like a session id") {
		t.Errorf("Import with an id-like title = %v", err)
	}
}

// --resume takes a unique prefix of a title (case-insensitive); LIKE's
// wildcards in the reference are plain characters.
func TestResolveByTitlePrefix(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	a := mustCreate(t, st, NewSession{})
	b := mustCreate(t, st, NewSession{})
	if err := st.SetTitle(ctx, a.ID, "say hi to the team"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, b.ID, "50% done"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Resolve(ctx, "Say hi"); err != nil || got.ID != a.ID {
		t.Errorf("Resolve(Say hi) = %v, %v; want %s", got.ID, err, a.ID)
	}
	if got, err := st.Resolve(ctx, "50%"); err != nil || got.ID != b.ID {
		t.Errorf("Resolve(50%%) = %v, %v", got.ID, err)
	}
	if _, err := st.Resolve(ctx, "%"); err == nil {
		t.Error("a bare % matched a title")
	}
}
