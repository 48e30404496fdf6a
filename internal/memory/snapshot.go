package memory

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// snapshotRule is the line drawn above and below a block header (Hermes:
// "═" * 46).
var snapshotRule = strings.Repeat("═", 46)

// Snapshot renders the memory blocks of the system prompt from the files as
// they are now, for targets in the order given (none = memory then user).
// Each non-empty target becomes one block, as Hermes' _render_block:
//
//	══════…
//	MEMORY (your personal notes) [67% — 1,474/2,200 chars]
//	══════…
//	entry one
//	§
//	entry two
//
// and USER PROFILE (who the user is) for the user target; blocks are
// separated by a blank line; an empty store gives "". Entries on disk that
// ScanThreats flags are replaced by a visible [BLOCKED: …] marker; a file over
// twice its limit (hand-edited) is cut head and tail with a marker.
//
// Snapshot does not cache: the agent calls it once at session start and
// keeps the string, so writes during the session reach disk but leave the
// session's system prompt byte-stable.
func (s *Store) Snapshot(targets ...Target) (string, error) {
	if len(targets) == 0 {
		targets = []Target{TargetMemory, TargetUser}
	}
	var blocks []string
	for _, t := range targets {
		st, err := s.State(t)
		if err != nil {
			return "", err
		}
		if b := renderBlock(st); b != "" {
			blocks = append(blocks, b)
		}
	}
	return strings.Join(blocks, "\n\n"), nil
}

func renderBlock(st State) string {
	if len(st.Entries) == 0 {
		return ""
	}
	shown := make([]string, len(st.Entries))
	for i, e := range st.Entries {
		shown[i] = e
		if found := ScanThreats(e); len(found) > 0 {
			ids := make([]string, len(found))
			for j, f := range found {
				ids[j] = f.ID
			}
			shown[i] = fmt.Sprintf("[BLOCKED: %s entry contained threat pattern(s): %s. Removed from system prompt; use memory(action=remove) to delete the original.]",
				st.Target.FileName(), strings.Join(ids, ", "))
		}
	}
	content := strings.Join(shown, EntryDelimiter)
	if renderCap := max(st.Limit*2, 4000); utf8.RuneCountInString(content) > renderCap {
		r := []rune(content)
		head, tail := renderCap*7/10, renderCap*2/10
		content = string(r[:head]) +
			fmt.Sprintf("\n\n[... %s chars truncated — memory over budget (%s/%s); consolidate via memory(action=remove/replace) ...]\n\n",
				groupThousands(len(r)-head-tail), groupThousands(st.Chars), groupThousands(st.Limit)) +
			string(r[len(r)-tail:])
	}
	over := ""
	if st.Chars > st.Limit {
		over = " ⚠ OVER BUDGET"
	}
	title := "MEMORY (your personal notes)"
	if st.Target == TargetUser {
		title = "USER PROFILE (who the user is)"
	}
	header := fmt.Sprintf("%s [%s%s]", title, st.Usage(), over)
	return snapshotRule + "\n" + header + "\n" + snapshotRule + "\n" + content
}
