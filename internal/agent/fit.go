package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
)

// RequestFitter shortens, in the request only, single messages too large
// for the context window: compression cannot help when one message alone
// exceeds the window (there is nothing to summarise around it), and without
// this the session fails on every later turn. The Compressor implements it.
type RequestFitter interface {
	// FitRequest returns msgs with oversized tool results cut to head and
	// tail with a marker; msgs itself is not modified. tight asks for a
	// smaller per-message budget, after the provider still said the
	// prompt is too long.
	FitRequest(sessionID string, msgs []llm.Message, tight bool) []llm.Message
}

// messageBudgetChars is the largest tool result, in characters, sent whole:
// a quarter of the context window (at 4 characters per token), or an
// eighth when tight; at least 2,000 characters.
func (c *Compressor) messageBudgetChars(tight bool) int {
	n := c.opts.ContextWindow // tokens × 4 chars / 4
	if tight {
		n /= 2
	}
	return max(n, 2000)
}

// FitRequest implements RequestFitter. A cut result keeps its first 40 %
// and last 60 % of the budget around a marker that names the spill file
// holding the whole result (written once under CompressorOptions.SpillDir;
// the stored session row also stays whole). The person is told once per
// result.
func (c *Compressor) FitRequest(sessionID string, msgs []llm.Message, tight bool) []llm.Message {
	budget := c.messageBudgetChars(tight)
	var out []llm.Message
	for i, m := range msgs {
		if m.Role != llm.RoleTool || utf8.RuneCountInString(m.Content) <= budget {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		spill := c.spill(sessionID, m)
		out[i].Content = headTail(m.Content, budget, spill)
		key := sessionID + "\x00" + m.ToolCallID
		c.mu.Lock()
		if c.told == nil {
			c.told = map[string]bool{}
		}
		first := !c.told[key]
		c.told[key] = true
		c.mu.Unlock()
		if first {
			where := "the session keeps it whole"
			if spill != "" {
				where = "the whole result is in " + spill
			}
			c.notice(fmt.Sprintf("the %s result (%d characters) alone is too large for the model's context window (%d tokens); "+
				"sending its head and tail only (%s)", m.ToolName, utf8.RuneCountInString(m.Content), c.opts.ContextWindow, where))
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// spill writes a tool result to SpillDir once and returns its path ("" when
// there is no SpillDir or the write failed).
func (c *Compressor) spill(sessionID string, m llm.Message) string {
	return spillResult(c.opts.SpillDir, sessionID, m)
}

// safeName keeps letters, digits, '-' and '_' of s (for a file name).
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, s)
	if s == "" {
		return "x"
	}
	return s
}

// headTail keeps the first 40 % and the last 60 % of max characters of s
// with a marker between them naming the omitted size and the spill file.
func headTail(s string, max int, spill string) string {
	runes := []rune(s)
	head := max * 40 / 100
	tail := max - head
	marker := fmt.Sprintf("\n\n[RESULT TRUNCATED FOR THE CONTEXT WINDOW: %d of %d characters omitted from the middle",
		len(runes)-head-tail, len(runes))
	if spill != "" {
		marker += "; the whole result is in " + spill + " (read parts of it with read_file or search_files)"
	}
	marker += "]\n\n"
	return string(runes[:head]) + marker + string(runes[len(runes)-tail:])
}
