package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/google/renameio/v2"

	"github.com/hermes-go/hermes/internal/llm"
)

// Bounds on tool results in a request (the stored session keeps every
// result whole); see README "Large tool results".
const (
	// MaxResultChars is the most characters of one tool result sent to
	// the model: a longer one is sent as its first 40 % and last 60 % of
	// this many characters around a note naming the spill file. The
	// terminal tool already cuts command output to 50,000 characters as
	// Hermes Agent does (tool.MaxOutputChars); its JSON result, with
	// newlines and quotes escaped, must pass whole, so this bound on every
	// other tool is twice that.
	MaxResultChars = 100_000
	// OldResultChars is the most characters of a tool result of an
	// earlier user turn (older than the last RecentTurns) sent again:
	// old large results would otherwise dominate every later request.
	OldResultChars = 4_000
	// RecentTurns is how many of the latest user turns keep their tool
	// results at MaxResultChars.
	RecentTurns = 2
)

// boundResults returns msgs with every tool result cut to MaxResultChars
// and those of user turns before the last RecentTurns cut to
// OldResultChars, head and tail around a note that names the spill file
// holding the whole result (written once under spillDir; "" = none). The
// cuts are deterministic, so a request's prefix stays the same from one
// call to the next (provider prompt caches keep working). msgs is not
// modified.
func boundResults(sessionID string, msgs []llm.Message, spillDir string) []llm.Message {
	recentFrom := 0 // index of the first message of the recent turns
	for i, seen := len(msgs)-1, 0; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			seen++
			if seen == RecentTurns {
				recentFrom = i
				break
			}
		}
	}
	var out []llm.Message
	for i, m := range msgs {
		if m.Role != llm.RoleTool {
			continue
		}
		limit := MaxResultChars
		if i < recentFrom {
			limit = OldResultChars
		}
		if utf8.RuneCountInString(m.Content) <= limit {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		out[i].Content = headTail(m.Content, limit, spillResult(spillDir, sessionID, m))
		if i < recentFrom {
			out[i].Content = fmt.Sprintf("[This result is from an earlier turn and is shortened to %d characters.]\n", limit) + out[i].Content
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// spillResult writes a tool result to dir once and returns its path ("" when
// dir is "" or the write failed).
func spillResult(dir, sessionID string, m llm.Message) string {
	if dir == "" {
		return ""
	}
	path := filepath.Join(dir, safeName(sessionID)+"-"+safeName(m.ToolCallID)+".txt")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	if err := renameio.WriteFile(path, []byte(m.Content), 0o600); err != nil {
		return ""
	}
	return path
}
