package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/session"
)

// converse runs one message through the session (Session.Ask) and
// delivers the answer: a queued acknowledgement, the typing indicator
// while the turn runs, tool progress, approval prompts, then the answer
// or the error. entered is called once the message is in the session's
// queue (or was refused).
func (c *Chat) converse(ctx context.Context, chat string, sess *session.Session, text string, entered func()) {
	var turn *session.Turn
	defer func() {
		if turn != nil {
			c.answers.done(chat, turn)
		}
	}()
	typing := c.typingWhileRunning(ctx, chat)
	defer typing.stop()
	progress := &statusMessage{chat: chat}
	last, err := sess.Ask(ctx, text, session.AskOptions{
		Subscribe: session.SubscribeOptions{Approver: true},
		Sending: func(send func() (*session.Turn, session.Ack, error)) (*session.Turn, session.Ack, error) {
			// The answer waits for the chat's earlier answers: two turns
			// of one session end in order, but their handlers deliver
			// concurrently.
			unlock := c.locks.lock("send:" + chat)
			t, ack, err := c.answers.send(chat, send)
			unlock()
			entered()
			if err != nil {
				return t, ack, err
			}
			turn = t
			if ack.Position > 0 {
				c.say(ctx, chat, fmt.Sprintf("Queued (%d ahead): I'll answer when the current message is done. /stop cancels it.", ack.Position))
			}
			return t, ack, nil
		},
	}, func(ev session.Event) {
		c.onEvent(ctx, chat, ev, progress)
		if ev.Kind == session.TurnStart {
			typing.started.Store(true)
		}
	})
	switch {
	case err != nil && turn == nil:
		c.say(ctx, chat, "Sorry, the message was not taken: "+err.Error())
	case err == nil:
		c.onEvent(ctx, chat, last, progress)
	}
}

// typingTicker repeats the chat's typing indicator every
// ChatConfig.TypingEvery once the turn started, until stop.
type typingTicker struct {
	started atomic.Bool
	quit    chan struct{}
	ended   chan struct{}
}

func (c *Chat) typingWhileRunning(ctx context.Context, chat string) *typingTicker {
	t := &typingTicker{quit: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(t.ended)
		tick := time.NewTicker(c.cfg.TypingEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if t.started.Load() {
					_ = c.p.Typing(ctx, chat)
				}
			case <-t.quit:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return t
}

// stop ends the ticker and waits for its goroutine.
func (t *typingTicker) stop() {
	close(t.quit)
	<-t.ended
}

// onEvent shows one event of the turn; it reports whether the turn ended.
func (c *Chat) onEvent(ctx context.Context, chat string, ev session.Event, progress *statusMessage) bool {
	switch ev.Kind {
	case session.TurnStart:
		_ = c.p.Typing(ctx, chat)
	case session.ToolStart, session.ToolEnd:
		if c.cfg.ToolProgress {
			c.progress(ctx, progress, ev)
		}
	case session.Notice:
		if ev.Fallback { // the answer comes from another model: say so
			c.say(ctx, chat, "ℹ "+ev.Text)
		}
	case session.ClarifyRequest:
		c.say(ctx, chat, c.rt.Redactor().Redact(clarifyMessage(ev.Question)))
	case session.ApprovalRequest:
		p := ev.Approval
		what := p.Command
		if what == "" {
			what = strings.TrimSpace(p.Tool + " " + p.Action + " " + p.Path)
		}
		c.say(ctx, chat, fmt.Sprintf("⚠ %s\n%s\nReply /approve (once), /approve session, /approve always, or /deny.", p.Danger, what))
	case session.Final:
		answer := ev.Text
		if strings.TrimSpace(answer) == "" {
			answer = "(no answer)"
		}
		c.answers.wait(ctx, chat, ev.TurnID)
		c.deliver(ctx, chat, OutMessage{Text: answer})
		return true
	case session.Error:
		c.answers.wait(ctx, chat, ev.TurnID)
		if ev.Cancelled {
			c.say(ctx, chat, "Stopped.")
		} else {
			c.say(ctx, chat, "Sorry, that failed: "+ev.Err.Error())
		}
		return true
	}
	return false
}

// statusMessage is the one message showing a turn's tool progress.
type statusMessage struct {
	chat  string
	id    string
	lines []string
}

// maxStatusLines bounds the tool lines kept in the status message.
const maxStatusLines = 8

// progress adds a tool event to the status message: the first sends it,
// later ones edit it. Progress is best effort: a failed send or edit is
// not retried (the answer is what must arrive).
func (c *Chat) progress(ctx context.Context, st *statusMessage, ev session.Event) {
	switch ev.Kind {
	case session.ToolStart:
		st.lines = append(st.lines, "⚙ "+ev.Tool+": "+clip(oneLine(argsSummary(ev.Args)), 120))
	case session.ToolEnd:
		if !ev.IsError || len(st.lines) == 0 {
			return
		}
		st.lines[len(st.lines)-1] += " ✗"
	}
	if len(st.lines) > maxStatusLines {
		st.lines = append([]string{"…"}, st.lines[len(st.lines)-maxStatusLines+1:]...)
	}
	text := c.rt.Redactor().Redact(strings.Join(st.lines, "\n"))
	if st.id == "" {
		id, err := c.p.Send(ctx, st.chat, OutMessage{Text: text, Plain: true})
		if err == nil {
			st.id = id
		}
		return
	}
	_ = c.p.Edit(ctx, st.chat, st.id, OutMessage{Text: text, Plain: true})
}

// argsSummary picks the telling argument of a tool call (the command, the
// path) out of its JSON arguments, else the arguments themselves.
func argsSummary(args string) string {
	for _, k := range []string{`"command":"`, `"path":"`, `"query":"`, `"url":"`} {
		if _, rest, ok := strings.Cut(args, k); ok {
			if v, _, ok := strings.Cut(rest, `"`); ok {
				return v
			}
		}
	}
	return args
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// helpText lists the chat commands.
const helpText = "Send a message to talk to the agent.\n/new or /reset: start a new session\n/stop: stop the running answer\n" +
	"/model [name]: show or switch this session's model\n/usage: token usage\n" +
	"/approve [session|always], /deny: answer an approval request\n/help: this text"

// IsCommand reports whether name ("new", "approve"...) is a chat command.
func IsCommand(name string) bool {
	switch strings.ToLower(name) {
	case "new", "reset", "stop", "model", "usage", "approve", "deny", "help", "start":
		return true
	}
	return false
}

// command runs a chat command for the conversation key.
func (c *Chat) command(ctx context.Context, chat, key, text string) {
	fields := strings.Fields(text)
	name := strings.ToLower(fields[0])
	name, _, _ = strings.Cut(name, "@") // /help@hermes_bot in groups
	open := func(fresh bool) *session.Session {
		s, err := c.open(ctx, key, fresh)
		if err != nil {
			c.say(ctx, chat, "Sorry, the session could not be opened: "+err.Error())
			return nil
		}
		return s
	}
	switch name {
	case "/new", "/reset":
		if s := open(false); s != nil {
			s.Cancel()
		}
		if s := open(true); s != nil {
			c.say(ctx, chat, "New session started.")
		}
	case "/stop":
		if s := open(false); s != nil {
			if s.Cancel() {
				c.say(ctx, chat, "Stopping…")
			} else {
				c.say(ctx, chat, "Nothing is running.")
			}
		}
	case "/model":
		if s := open(false); s != nil {
			if len(fields) > 1 {
				if err := s.SetModel(ctx, fields[1]); err != nil {
					c.cfg.Warn(fmt.Sprintf("%s: saving the model of session %s: %v", c.p.Name(), s.ID(), err))
				}
				c.say(ctx, chat, "Model for this session: "+s.Model()+" (from the next message).")
				return
			}
			c.say(ctx, chat, "Model: "+s.Model()+" (provider "+c.rt.ProviderName()+"). /model NAME switches this session.")
		}
	case "/usage":
		c.usage(ctx, chat, open(false))
	case "/approve", "/deny":
		c.approve(ctx, chat, open(false), name, fields)
	case "/help", "/start":
		c.say(ctx, chat, helpText)
	default:
		c.say(ctx, chat, "Unknown command "+fields[0]+"; /help lists the commands.")
	}
}

func (c *Chat) usage(ctx context.Context, chat string, s *session.Session) {
	if s == nil {
		return
	}
	st, err := c.rt.Store().Session(ctx, s.ID())
	if err != nil {
		c.say(ctx, chat, "No usage yet in this session.")
		return
	}
	c.say(ctx, chat, fmt.Sprintf("Session %s: input %d tokens, output %d tokens, %d API calls.",
		s.ID(), st.Usage.InputTokens, st.Usage.OutputTokens, st.APICallCount))
}

func (c *Chat) approve(ctx context.Context, chat string, s *session.Session, name string, fields []string) {
	if s == nil {
		return
	}
	answer := approval.Deny
	if name == "/approve" {
		answer = approval.Once
		if len(fields) > 1 {
			answer = approval.ParseAnswer(fields[1])
		}
	}
	if !s.Approve("", answer) {
		c.say(ctx, chat, "No approval is pending.")
		return
	}
	c.say(ctx, chat, "Answered: "+answer.String()+".")
}

// answerOrder delivers each chat's answers in the order its messages were
// taken: a turn's answer waits until the answers of the chat's earlier
// turns are out (or their handlers gave up).
type answerOrder struct {
	mu    sync.Mutex
	last  map[string]chan struct{} // chat → closed when its newest turn is answered
	turns map[string]answerTicket  // turn id → its place
}

type answerTicket struct {
	prev, mine chan struct{}
}

// send runs take (the session Send) and queues its turn behind the chat's
// earlier ones. The caller holds the chat's send lock, so the queue
// follows the session's.
func (o *answerOrder) send(chat string, take func() (*session.Turn, session.Ack, error)) (*session.Turn, session.Ack, error) {
	turn, ack, err := take()
	if err != nil {
		return turn, ack, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last, o.turns = map[string]chan struct{}{}, map[string]answerTicket{}
	}
	t := answerTicket{prev: o.last[chat], mine: make(chan struct{})}
	o.last[chat] = t.mine
	o.turns[turn.ID] = t
	return turn, ack, nil
}

// wait blocks until the chat's answers before turnID are delivered, or
// ctx ends.
func (o *answerOrder) wait(ctx context.Context, chat, turnID string) {
	o.mu.Lock()
	t, ok := o.turns[turnID]
	o.mu.Unlock()
	if !ok || t.prev == nil {
		return
	}
	select {
	case <-t.prev:
	case <-ctx.Done():
	}
}

// done marks turn's answer delivered (or abandoned), letting the next go.
func (o *answerOrder) done(chat string, turn *session.Turn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.turns[turn.ID]
	if !ok {
		return
	}
	delete(o.turns, turn.ID)
	close(t.mine)
	if o.last[chat] == t.mine {
		delete(o.last, chat)
	}
}

// clarifyMessage is a clarify question as a chat message: the question,
// its numbered choices and how to answer (the next message is the answer).
func clarifyMessage(q *session.Question) string {
	var b strings.Builder
	b.WriteString("❓ " + q.Question)
	for i, c := range q.Choices {
		fmt.Fprintf(&b, "\n%d. %s", i+1, c)
	}
	if len(q.Choices) > 0 {
		b.WriteString("\nReply with a number or your own answer.")
	} else {
		b.WriteString("\nReply with your answer.")
	}
	return b.String()
}
