package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// HistoryRewriter persists a compacted history: the session's active
// messages are replaced by msgs (old rows stay archived and searchable).
type HistoryRewriter interface {
	RewriteHistory(ctx context.Context, sessionID string, msgs []llm.Message) error
}

// CompressorOptions configures a Compressor. Defaults follow Hermes Agent's
// compression: section ("context-compression-and-caching.md").
type CompressorOptions struct {
	Provider      llm.Provider
	Model         string
	ContextWindow int     // tokens; 0 = DefaultContextWindow(Model)
	Threshold     float64 // fraction of the window that triggers compression; default 0.50
	ProtectFirstN int     // default 3
	ProtectLastN  int     // default 20
	// Pending returns the session's open todo items for re-injection ("" = none).
	Pending  func(sessionID string) string
	Rewriter HistoryRewriter // nil = in memory only
	Notice   func(string)
	Now      func() time.Time
	// SpillDir receives the whole text of tool results cut by FitRequest
	// ("" = none; the stored session keeps them whole anyway).
	SpillDir string
}

// Compressor summarises the middle of a long conversation with the model,
// keeping the system prompt, the first ProtectFirstN and the last
// ProtectLastN messages. A tool call is never separated from its result. If
// summarising fails the history is kept as it was and further attempts back
// off (60 s, 300 s, 900 s) instead of looping.
type Compressor struct {
	opts CompressorOptions

	mu       sync.Mutex
	failures int
	until    time.Time
	told     map[string]bool // oversized results already reported (FitRequest)
}

// Cooldowns after consecutive summary failures.
var compressCooldowns = [...]time.Duration{60 * time.Second, 300 * time.Second, 900 * time.Second}

// NewCompressor returns a Compressor with defaults applied.
func NewCompressor(o CompressorOptions) *Compressor {
	if o.Threshold <= 0 || o.Threshold > 1 {
		o.Threshold = 0.5
	}
	if o.ProtectFirstN <= 0 {
		o.ProtectFirstN = 3
	}
	if o.ProtectLastN <= 0 {
		o.ProtectLastN = 20
	}
	if o.ContextWindow <= 0 {
		o.ContextWindow = DefaultContextWindow(o.Model)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Compressor{opts: o}
}

// DefaultContextWindow is the family default context window, in tokens,
// used when neither model.context_length nor the endpoint tells it.
func DefaultContextWindow(model string) int {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "claude"):
		return 200_000
	case strings.Contains(m, "gemini"), strings.Contains(m, "gpt-4.1"):
		return 1_000_000
	case strings.Contains(m, "gpt-5"):
		return 400_000
	default:
		return 128_000
	}
}

// EstimateTokens is a rough token count (4 characters per token) of a
// prompt, used when the provider has not reported usage yet.
func EstimateTokens(system string, h []llm.Message) int {
	n := len(system)
	for _, m := range h {
		n += len(m.Content) + len(m.Reasoning) + 16
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return n / 4
}

// Compact implements Compactor.
func (c *Compressor) Compact(ctx context.Context, s *Session, last llm.Usage, force bool) (bool, error) {
	tokens := EstimateTokens(s.System, s.History)
	if last.InputTokens+last.CacheReadTokens+last.CacheWriteTokens > tokens {
		tokens = last.InputTokens + last.CacheReadTokens + last.CacheWriteTokens
	}
	if !force && float64(tokens) < c.opts.Threshold*float64(c.opts.ContextWindow) {
		return false, nil
	}
	c.mu.Lock()
	cooling := c.opts.Now().Before(c.until)
	c.mu.Unlock()
	if cooling && !force {
		return false, nil
	}
	head, middle, tail := splitForCompaction(s.History, c.opts.ProtectFirstN, c.opts.ProtectLastN)
	if len(middle) == 0 {
		return false, nil
	}
	c.notice(fmt.Sprintf("compressing context: summarising %d of %d messages (~%d tokens)", len(middle), len(s.History), tokens))
	summary, err := c.summarise(ctx, middle)
	if err != nil {
		c.mu.Lock()
		wait := compressCooldowns[min(c.failures, len(compressCooldowns)-1)]
		c.failures++
		c.until = c.opts.Now().Add(wait)
		c.mu.Unlock()
		c.notice(fmt.Sprintf("context compression failed (%v); history kept as it was, next try in %s", err, wait))
		if c.opts.Notice != nil {
			return false, noticedError{err}
		}
		return false, err
	}
	c.mu.Lock()
	c.failures, c.until = 0, time.Time{}
	c.mu.Unlock()
	text := summaryHeader + "\n" + summary
	if c.opts.Pending != nil {
		if p := c.opts.Pending(s.ID); p != "" {
			text += "\n\n" + p
		}
	}
	next := make([]llm.Message, 0, len(head)+1+len(tail))
	next = append(next, head...)
	next = append(next, llm.Message{Role: llm.RoleUser, Content: text})
	next = append(next, tail...)
	if c.opts.Rewriter != nil {
		if err := c.opts.Rewriter.RewriteHistory(context.WithoutCancel(ctx), s.ID, next); err != nil {
			return false, fmt.Errorf("saving the compacted history: %w", err)
		}
	}
	s.History = next
	return true, nil
}

// noticedError is a compaction error the Compressor has already shown to
// the person through its Notice, so the agent does not report it twice.
type noticedError struct{ error }

func (e noticedError) Unwrap() error { return e.error }

func (c *Compressor) notice(s string) {
	if c.opts.Notice != nil {
		c.opts.Notice(s)
	}
}

// splitForCompaction cuts h into a protected head, a middle to summarise
// and a protected tail, moving the cuts so that no tool result is separated
// from the assistant message that called it.
func splitForCompaction(h []llm.Message, firstN, lastN int) (head, middle, tail []llm.Message) {
	if len(h) <= firstN+lastN {
		return h, nil, nil
	}
	start := firstN
	for start < len(h) && h[start].Role == llm.RoleTool {
		start++ // keep results with their call in the head
	}
	end := len(h) - lastN
	for end > start && h[end].Role == llm.RoleTool {
		end-- // pull the call into the tail with its results
	}
	if end <= start {
		return h, nil, nil
	}
	return h[:start], h[start:end], h[end:]
}

const summaryPrompt = `You compress the middle of an agent's conversation so the agent can continue without it.
Write a structured summary with these sections:
## Goal
## Progress (what was done, in order)
## Key facts and decisions (exact values, names, paths, commands, errors)
## Files and changes
## Open questions and next steps
Keep every fact the agent will need; drop chatter. Do not call tools.`

// summarise asks the model for a structured summary of msgs.
func (c *Compressor) summarise(ctx context.Context, msgs []llm.Message) (string, error) {
	if c.opts.Provider == nil {
		return "", errors.New("no provider for summaries")
	}
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "### %s", m.Role)
		if m.ToolName != "" {
			fmt.Fprintf(&b, " (%s)", m.ToolName)
		}
		b.WriteString("\n")
		if m.Content != "" {
			b.WriteString(truncate(m.Content, 4000))
			b.WriteString("\n")
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "[tool call %s %s]\n", tc.Name, truncate(tc.Arguments, 1000))
		}
	}
	excerpt := b.String()
	// The summary call itself must fit the window: at most half of it
	// (about 2 characters per token of budget), keeping the newest part.
	if limit := c.opts.ContextWindow * 2; len(excerpt) > limit {
		excerpt = "[… older part of the excerpt omitted to fit the context window …]\n" + excerpt[len(excerpt)-limit:]
	}
	st, err := c.opts.Provider.Stream(ctx, llm.Request{
		Model:    c.opts.Model,
		System:   summaryPrompt,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Summarise this conversation excerpt:\n\n" + excerpt}},
	})
	if err != nil {
		return "", err
	}
	resp, err := llm.Accumulate(st, nil)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(resp.Message.Content) == "" {
		return "", errors.New("the model returned an empty summary")
	}
	return resp.Message.Content, nil
}

// summaryHeader starts the user message that replaces compressed history.
const summaryHeader = "[Summary of the earlier part of this conversation, made by context compression]"
