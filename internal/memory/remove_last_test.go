package memory

import (
	"os"
	"testing"
)

// Removing the only entry empties the file on disk; it used to report
// "Entry removed." and leave the file unchanged, because the emptied list
// was nil, which locked() reads as "nothing to write".
func TestRemoveLastEntryEmptiesFile(t *testing.T) {
	s := newTestStore(t, 0, 0)
	mustAdd(t, s, TargetUser, "User works on the staging cluster")
	out, err := s.Remove(TargetUser, "staging")
	if err != nil || !out.Changed {
		t.Fatalf("Remove = %+v, %v", out, err)
	}
	st, err := s.State(TargetUser)
	if err != nil || len(st.Entries) != 0 {
		t.Fatalf("entries after removing the last one = %q, %v", st.Entries, err)
	}
	data, err := os.ReadFile(s.Path(TargetUser))
	if err != nil || len(data) != 0 {
		t.Fatalf("USER.md = %q, %v; want an empty file", data, err)
	}
}
