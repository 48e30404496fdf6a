package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/toolargs"
	"github.com/hermes-go/hermes/internal/tool"
)

// wrapUpNote is sent when the iteration budget is spent; the next call has no tools.
const wrapUpNote = "[The tool-call budget for this turn is used up. Do not call tools. " +
	"Give your final answer now: summarise what you did, what you found and what is left.]"

// InterruptedAnswer is the synthetic assistant message older builds stored
// before a new user message when the previous turn ended without any answer.
// It is no longer written (see requestMessages); stored sessions may hold it.
const InterruptedAnswer = "[no answer: this turn was interrupted before the model replied]"

// CancelledResult is the synthetic tool result stored for a tool call that was
// interrupted before it finished.
const CancelledResult = "[cancelled: the user interrupted the turn before this tool call finished]"

// UnknownOutcomeResult is the synthetic tool result a resumed session gets
// for a call whose result was never stored: hermes was killed (or crashed)
// while the call ran, so nobody knows whether it had effects.
const UnknownOutcomeResult = "[interrupted: hermes stopped while this tool call ran and its result was never recorded, " +
	"so its outcome is unknown: it may have run completely, partly or not at all. " +
	"Check its side effects (files, processes, remote state) before repeating it.]"

// RunTurn sends userText to the model as a new user message of s and runs
// tool calls until the model answers in text. Every message is recorded as it
// is produced. On cancellation it returns ErrCancelled after storing
// synthetic results for unfinished tool calls; on a provider error it
// returns that error (an *llm.APIError) with the history kept valid.
func (a *Agent) RunTurn(ctx context.Context, s *Session, userText string) (res TurnResult, err error) {
	ctx, budget, own := withBudget(ctx, a.opts.MaxTurns)
	defer func() {
		if own { // the subagents' calls and tokens are part of this turn's
			u, n := budget.children()
			res.Usage, res.APICalls = res.Usage.Add(u), res.APICalls+n
		} else {
			budget.addChild(res.Usage, res.APICalls)
		}
	}()
	// A previous turn that ended without an answer (Ctrl-C, kill, provider
	// error) leaves its user message last; no assistant text is invented for
	// it: requestMessages sends it together with this one.
	s.History = RepairHistory(s.History)
	if err := a.record(ctx, s, llm.Message{Role: llm.RoleUser, Content: userText}); err != nil {
		return res, err
	}
	failures := map[string]int{}
	var lastUsage llm.Usage // usage of the latest model call: the size of the last prompt
	for iteration := 0; ; iteration++ {
		if err := ctx.Err(); err != nil {
			return res, ErrCancelled
		}
		withTools := iteration < a.opts.MaxTurns && budget.take()
		if !withTools {
			a.notice("max turns (%d) reached; asking the model for a final answer", a.opts.MaxTurns)
			if err := a.record(ctx, s, llm.Message{Role: llm.RoleUser, Content: wrapUpNote}); err != nil {
				return res, err
			}
		}
		resp, msg, err := a.answer(ctx, s, withTools, lastUsage, &res)
		if err != nil {
			if ctx.Err() != nil {
				return res, ErrCancelled
			}
			var apiErr *llm.APIError
			if errors.As(err, &apiErr) && apiErr.ContextOverflow {
				a.notice("%s", overflowNotice(userText))
				if rerr := a.record(ctx, s, llm.Message{Role: llm.RoleAssistant, Content: OverflowAnswer, FinishReason: FinishContextOverflow}); rerr != nil {
					return res, rerr
				}
			}
			return res, err
		}
		lastUsage = resp.Usage
		calls := msg.ToolCalls // as the model wrote them: runTool repairs and notes
		msg.ToolCalls = ranArguments(calls)
		if err := a.recordAnswer(ctx, s, msg, resp.Usage); err != nil {
			return res, err
		}
		if len(msg.ToolCalls) == 0 {
			res.Text = msg.Content
			if !withTools {
				res.Stopped = "max_turns"
			}
			return res, nil
		}
		results, err := a.runTools(ctx, s.ID, calls)
		res.ToolCalls += len(msg.ToolCalls)
		// Each result was stored as its call finished; the history gets
		// them in call order, the order a resumed session loads them in.
		for i, tc := range msg.ToolCalls {
			s.History = append(s.History, resultMessage(tc, results[i]))
		}
		if err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			return res, ErrCancelled
		}
		if stop := a.repeatedFailure(failures, msg.ToolCalls, results); stop != "" {
			res.Stopped = "repeated_failure"
			res.Text = stop
			if err := a.record(ctx, s, llm.Message{Role: llm.RoleAssistant, Content: stop, FinishReason: "repeated_failure"}); err != nil {
				return res, err
			}
			return res, nil
		}
	}
}

// answer makes one model call (see call) and returns the model's message
// with tool calls written as text recovered. An empty answer (no text, no
// tool call) is asked for once more; a second one is ErrEmptyAnswer. The
// wrap-up call (withTools false) is not repeated.
func (a *Agent) answer(ctx context.Context, s *Session, withTools bool, last llm.Usage, res *TurnResult) (llm.Response, llm.Message, error) {
	for attempt := 1; ; attempt++ {
		resp, err := a.call(ctx, s, withTools, last, res)
		if err != nil {
			return resp, llm.Message{}, err
		}
		msg := resp.Message
		if resp.FinishReason == "length" {
			a.notice("the model's answer was cut off at its output token limit (raise model.max_tokens)")
		}
		if len(msg.ToolCalls) == 0 && withTools && a.opts.ParseTextToolCalls != nil && msg.Content != "" {
			known := func(name string) bool { _, ok := a.opts.Tools.Get(name); return ok }
			if calls, rest := a.opts.ParseTextToolCalls(msg.Content, known); len(calls) > 0 {
				msg.ToolCalls, msg.Content = calls, rest
			}
		}
		if !withTools {
			// The wrap-up call must end the turn; one without text is
			// reported as the budget running out (Stopped "max_turns").
			msg.ToolCalls = nil
			return resp, msg, nil
		}
		if !isEmptyAnswer(msg) {
			return resp, msg, nil
		}
		if attempt > 1 || ctx.Err() != nil {
			return resp, msg, ErrEmptyAnswer
		}
		a.emit(Event{Kind: EventRetry, Text: "the model returned an empty answer (no text, no tool call); asking once more"})
		last = resp.Usage
	}
}

// call makes one model call, compacting the history first when needed and
// once more if the provider reports a context overflow. last is the usage of
// the previous model call of the turn (the size of the last prompt; zero at
// the start of a turn): the compaction threshold is compared with it, never
// with the turn's summed usage.
func (a *Agent) call(ctx context.Context, s *Session, withTools bool, last llm.Usage, res *TurnResult) (llm.Response, error) {
	if a.opts.Compactor != nil {
		if _, err := a.opts.Compactor.Compact(ctx, s, last, false); err != nil && !errors.As(err, new(noticedError)) {
			a.notice("context compression failed, keeping the full history: %v", err)
		}
	}
	resp, err := a.streamFallingBack(ctx, s, withTools, res)
	r := a.route(res.route)
	var apiErr *llm.APIError
	if err != nil && errors.As(err, &apiErr) && apiErr.ContextOverflow && a.opts.Compactor != nil {
		changed, cerr := a.opts.Compactor.Compact(ctx, s, last, true)
		_, fits := a.opts.Compactor.(RequestFitter)
		switch {
		case cerr == nil && changed:
			a.notice("the provider says the prompt is too long; compressed the history, retrying once")
			resp, err = a.stream(ctx, s, withTools, false, r)
		case fits:
			a.notice("the provider says the prompt is too long and there is nothing left to summarise; retrying once with large tool results cut further")
			resp, err = a.stream(ctx, s, withTools, true, r)
		}
	}
	if err != nil {
		return resp, err
	}
	resp.Message.Model, resp.Message.Provider = r.Model, r.Name
	res.APICalls++
	res.Usage = res.Usage.Add(resp.Usage)
	if _, together := a.opts.Recorder.(UsageAppender); a.opts.Recorder != nil && !together {
		if uerr := a.opts.Recorder.AddUsage(context.WithoutCancel(ctx), s.ID, resp.Usage, 1); uerr != nil {
			return resp, fmt.Errorf("saving usage to the session store: %w", uerr)
		}
	}
	return resp, nil
}

// midStreamRetries is how many times a model call cut off mid-answer (the
// connection closed after some of the answer arrived) is repeated.
const midStreamRetries = 2

// streamRetrying is stream, repeated when the connection closed in the
// middle of the answer: errors before the first event are retried by
// llm.WithRetry, but once events were delivered only the whole call can
// be repeated (the partial answer is discarded, like a 5xx).
func (a *Agent) streamRetrying(ctx context.Context, s *Session, withTools bool, r Route) (llm.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := a.stream(ctx, s, withTools, false, r)
		if err == nil || attempt > midStreamRetries || ctx.Err() != nil || !cutMidStream(resp, err) {
			return resp, err
		}
		a.emit(Event{Kind: EventRetry, Text: fmt.Sprintf("the model's answer was cut off mid-stream (%v); retrying (%d/%d)", err, attempt, midStreamRetries)})
	}
}

// cutMidStream reports whether err ended a stream that had already
// delivered part of an answer, for a reason worth retrying.
func cutMidStream(resp llm.Response, err error) bool {
	m := resp.Message
	partial := m.Content != "" || m.Reasoning != "" || len(m.ToolCalls) > 0
	return partial && (errors.Is(err, llm.ErrIncompleteStream) || llm.IsRetryable(err))
}

// stream makes one model call with s's history on route r. Tool-call arguments are
// made valid JSON and, when the Compactor is a RequestFitter, single tool
// results too large for the context window are cut in the request (tight:
// cut further, after an overflow error).
func (a *Agent) stream(ctx context.Context, s *Session, withTools, tight bool, r Route) (llm.Response, error) {
	req := llm.Request{
		Model:           r.Model,
		System:          s.System,
		Messages:        requestMessages(currentImagesOnly(ValidArguments(dropOverflowedTurns(s.History)))),
		MaxTokens:       a.opts.MaxTokens,
		ReasoningEffort: a.opts.ReasoningEffort,
	}
	req.Messages = boundResults(s.ID, req.Messages, a.opts.SpillDir)
	if f, ok := a.opts.Compactor.(RequestFitter); ok {
		req.Messages = f.FitRequest(s.ID, req.Messages, tight)
	}
	if withTools {
		req.Tools = a.opts.Tools.Specs()
	}
	st, err := r.Provider.Stream(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Accumulate(st, func(ev llm.Event) { a.emit(Event{Kind: EventModel, Model: ev}) })
}

// resultMessage is the tool message answering tc with r.
func resultMessage(tc llm.ToolCall, r tool.Result) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: r.Content, Parts: r.Parts, IsError: r.IsError}
}

// runTools executes calls and returns their results in call order. Calls
// run concurrently when every tool of the batch allows it. Each result is
// persisted as soon as its call finishes, so a kill during a batch loses
// only the calls still running; the error is the first failure to store.
func (a *Agent) runTools(ctx context.Context, sessionID string, calls []llm.ToolCall) ([]tool.Result, error) {
	results := make([]tool.Result, len(calls))
	var (
		mu       sync.Mutex
		storeErr error
	)
	parallel := len(calls) > 1
	for _, tc := range calls {
		if t, ok := a.opts.Tools.Get(tc.Name); !ok || !t.Parallel() {
			parallel = false
		}
	}
	run := func(i int) {
		tc := calls[i]
		if ctx.Err() != nil {
			results[i] = tool.Result{Content: CancelledResult, IsError: true}
			if err := a.persist(ctx, sessionID, resultMessage(tc, results[i])); err != nil {
				mu.Lock()
				storeErr = cmp.Or(storeErr, err)
				mu.Unlock()
			}
			return
		}
		a.emit(Event{Kind: EventToolStart, Call: tc})
		results[i] = a.runTool(ctx, sessionID, tc)
		if a.opts.Redact != nil {
			results[i].Content = a.opts.Redact(results[i].Content)
		}
		if ctx.Err() != nil {
			results[i] = cancelled(results[i])
		}
		if err := a.persist(ctx, sessionID, resultMessage(tc, results[i])); err != nil {
			mu.Lock()
			storeErr = cmp.Or(storeErr, err)
			mu.Unlock()
		}
		a.emit(Event{Kind: EventToolResult, Call: tc, Result: results[i]})
	}
	if !parallel {
		for i := range calls {
			run(i)
		}
		return results, storeErr
	}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() { defer wg.Done(); run(i) }()
	}
	wg.Wait()
	return results, storeErr
}

// cancelled marks the result of a call interrupted while it ran: the
// synthetic CancelledResult, followed by whatever the tool returned (for
// example a command's partial output), so the model reads it as an
// interruption and not as the tool's own failure.
func cancelled(r tool.Result) tool.Result {
	if r.Content == "" {
		return tool.Result{Content: CancelledResult, IsError: true}
	}
	return tool.Result{Content: CancelledResult + "\nWhat the tool returned when it was stopped:\n" + r.Content, IsError: true}
}

// runTool validates one call's arguments and runs it. Problems the model can
// fix (unknown tool, malformed JSON) come back as error results.
func (a *Agent) runTool(ctx context.Context, sessionID string, tc llm.ToolCall) (r tool.Result) {
	t, ok := a.opts.Tools.Get(tc.Name)
	if why, down := a.opts.Tools.Unavailable(tc.Name); !ok && down {
		return tool.Errorf("%s is unavailable: %s", tc.Name, why)
	}
	if !ok {
		return tool.Errorf("unknown tool %q; available tools: %s", tc.Name, strings.Join(a.opts.Tools.Names(), ", "))
	}
	fixed, err := toolargs.Repair(tc.Arguments)
	if err != nil {
		return tool.Errorf("the arguments of this %s call are not a valid JSON object (%v), so it was not executed; "+
			"call it again with a complete JSON object matching its schema. Arguments received: %s", tc.Name, err, truncate(tc.Arguments, 500))
	}
	args, _ := toolargs.Coerce(fixed.JSON, t.Spec().Parameters)
	if note := fixed.Note(); note != "" {
		defer func() { r.Content = note + "\n" + r.Content }()
	}
	defer func() {
		if p := recover(); p != nil {
			r = tool.Errorf("tool %s failed internally: %v", tc.Name, p)
		}
	}()
	if a.opts.TaskID != "" {
		sessionID = a.opts.TaskID // a subagent's tools act in its parent's environment
	}
	return t.Run(ctx, tool.Call{ID: tc.ID, SessionID: sessionID, Args: json.RawMessage(args)})
}

// repeatedFailure counts failing calls by name and arguments and returns a
// stop explanation when one has failed RepeatedFailureLimit times.
func (a *Agent) repeatedFailure(failures map[string]int, calls []llm.ToolCall, results []tool.Result) string {
	for i, tc := range calls {
		if !results[i].IsError {
			continue
		}
		key := tc.Name + "\x00" + strings.TrimSpace(tc.Arguments)
		failures[key]++
		if failures[key] >= a.opts.RepeatedFailureLimit {
			return fmt.Sprintf("Stopped: the same %s call (same arguments) failed %d times in this turn, last with: %s. "+
				"Change the approach or the arguments and ask again.",
				tc.Name, failures[key], truncate(firstLine(results[i].Content), 300))
		}
	}
	return ""
}

// UnrecordedResults returns the UnknownOutcomeResult messages for the tool
// calls of the last assistant message of h that have no result, when only
// tool results follow that message: hermes was killed while its batch ran.
// A resume stores them (once: the next load finds them), so that `sessions
// show` and `export` list every call with a result. Older gaps, followed by
// later messages, are left to RepairHistory.
func UnrecordedResults(h []llm.Message) []llm.Message {
	i := len(h) - 1
	for i >= 0 && h[i].Role == llm.RoleTool {
		i--
	}
	if i < 0 || h[i].Role != llm.RoleAssistant || len(h[i].ToolCalls) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, m := range h[i+1:] {
		have[m.ToolCallID] = true
	}
	var out []llm.Message
	for _, tc := range h[i].ToolCalls {
		if !have[tc.ID] {
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: UnknownOutcomeResult, IsError: true})
		}
	}
	return out
}

// RepairHistory returns h with the synthetic UnknownOutcomeResult added
// after any assistant tool call that has no result (a crash or kill while
// the call ran), so that every provider accepts the history. Results are
// put next to their call in call order (they are stored as each call
// finishes, so the store may hold them in completion order). It also drops
// tool results whose call is not in the history.
func RepairHistory(h []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(h))
	for i := 0; i < len(h); i++ {
		m := h[i]
		if m.Role == llm.RoleTool {
			continue // kept below, next to its call
		}
		out = append(out, m)
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		// Gather the tool results that follow this assistant message.
		have := map[string]llm.Message{}
		j := i + 1
		for ; j < len(h) && h[j].Role == llm.RoleTool; j++ {
			have[h[j].ToolCallID] = h[j]
		}
		for _, tc := range m.ToolCalls {
			if r, ok := have[tc.ID]; ok {
				out = append(out, r)
			} else {
				out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: UnknownOutcomeResult, IsError: true})
			}
		}
		i = j - 1
	}
	return out
}

// requestMessages is the history as sent to the provider: a run of user
// messages (a turn that failed or was interrupted before the model answered,
// then the next prompt) is sent as one user message, so the conversation
// alternates without an assistant answer the provider never gave. The
// stored rows stay as they were. A compression summary stays a message of
// its own.
func requestMessages(h []llm.Message) []llm.Message {
	mergeable := func(prev, m llm.Message) bool {
		return prev.Role == llm.RoleUser && m.Role == llm.RoleUser &&
			!strings.HasPrefix(prev.Content, summaryHeader) && !strings.HasPrefix(m.Content, summaryHeader)
	}
	merged := false
	for i := 1; i < len(h) && !merged; i++ {
		merged = mergeable(h[i-1], h[i])
	}
	if !merged {
		return h
	}
	out := make([]llm.Message, 0, len(h))
	for _, m := range h {
		if n := len(out); n > 0 && mergeable(out[n-1], m) {
			out[n-1].Content += "\n\n" + m.Content
			out[n-1].Parts = slices.Concat(out[n-1].Parts, m.Parts)
			continue
		}
		out = append(out, m)
	}
	return out
}

// imageDropped marks a tool result whose image left the request.
const imageDropped = "\n[The image of this result was sent in an earlier turn and is no longer attached.]"

// currentImagesOnly keeps the images (content parts) of the current turn,
// from the last user message on, and drops those of earlier turns from the
// request (the stored history keeps them): a screenshot costs a thousand
// tokens or more on every later call.
func currentImagesOnly(h []llm.Message) []llm.Message {
	last := -1
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleUser {
			last = i
			break
		}
	}
	var out []llm.Message
	for i := 0; i < last; i++ {
		if len(h[i].Parts) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(h)
		}
		out[i].Parts = nil
		out[i].Content += imageDropped
	}
	if out == nil {
		return h
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
