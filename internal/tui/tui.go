// Package tui is hermes' full-screen-less terminal UI: a bubbletea v2
// program drawn inline below the shell prompt. Finished output (answers
// rendered as markdown, tool calls with their outcome, notices) is printed
// to the terminal's scrollback; the live region at the bottom holds the
// streaming answer, a pending approval, the input editor and the status bar.
//
// The TUI is a client of the session runtime (internal/session), like the
// line REPL: it sends messages to a Session, reads the session's events
// from a Subscription and answers approvals with Session.Approve.
package tui

import (
	"context"
	"errors"
	"io"
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// Options configure the TUI.
type Options struct {
	// Runtime and Session are the session runtime and the open session.
	Runtime *session.Runtime
	Session *session.Session
	// Home is HERMES_HOME: the input history is kept in Home/tui_history.
	Home string
	// Cwd is the directory `@path` completion lists.
	Cwd string
	// Version is shown in the banner.
	Version string
	// Initial, when not empty, is sent as the first message (-q on a terminal).
	Initial string
	// Preload prepends preloaded skills to the first message (nil: none).
	Preload func(text string) (string, error)
	// Review runs the self-improvement review after a turn and returns
	// one-line changes to show (nil: no review).
	Review func(ctx context.Context, s *session.Session, res agent.TurnResult) []string
	// Models lists the models /model offers (nil or an error: type a name).
	Models func(ctx context.Context) ([]string, error)
	// SwitchModel restarts the runtime on model, keeping the open session
	// (nil: /model only names the model in use).
	SwitchModel func(ctx context.Context, model string) (*session.Runtime, *session.Session, error)
	// BoxState reports the box's state ("starting", "ready", "stopped")
	// when terminal.backend is box; nil otherwise.
	BoxState func() string
	// Yolo and Verbose are the starting states of /yolo and /verbose.
	Yolo, Verbose bool
	// Notices are lines for the person written while the TUI runs (the
	// process's stderr: warnings, "waiting for another turn"); they are
	// printed above the live region instead of over it.
	Notices <-chan string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Model is the TUI's bubbletea model.
type Model struct {
	opts Options
	ctx  context.Context
	rt   *session.Runtime
	sess *session.Session
	sub  *session.Subscription
	now  func() time.Time

	width, height int
	input         textarea.Model
	history       *history
	complete      completion
	picker        *picker

	turn      *liveTurn // the running turn, nil when idle
	approval  *approvalPrompt
	question  string // id of the clarify question the next line answers ("" = none)
	lastCtrlC time.Time
	hint      string // one-line hint above the input ("Ctrl-C again to quit")
	started   time.Time
	usage     usageTotals
	ctxUsed   int
	yolo      bool
	verbose   bool
	lastThink string // the last turn's reasoning, for Ctrl-O
	lastUser  string // the last message sent, for /retry
	preloaded bool
	// compressing is set while /compress runs; messages wait for it.
	compressing bool
	quitting    bool
	styles      styles
	pastes      map[string]string // placeholder → pasted text (large pastes)
	md          *markdown         // markdown renderer, built on first use
	// outbox holds the rows waiting to be printed above the live region
	// (printer.go); printing is set while a chunk of them is in flight.
	outbox   []string
	printing bool
	ready    bool // the first frame was drawn: prints may start
	// greeted is set once the banner was printed (at the first size).
	greeted bool
	// sized is set at the first size the terminal reported (width and
	// height are 80×24 until then).
	sized bool
	// reflows counts the width changes; a reflowMsg of an earlier one is
	// stale (the size had not settled).
	reflows int
}

// usageTotals are the open session's token counts (stored ones included).
type usageTotals struct {
	input, output, cached, calls int
}

// New builds the TUI model for ctx (cancelling ctx quits).
func New(ctx context.Context, o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Model{opts: o, ctx: ctx, rt: o.Runtime, sess: o.Session, now: o.Now,
		width: 80, height: 24, yolo: o.Yolo, verbose: o.Verbose, styles: newStyles()}
	m.started = m.now()
	m.history = loadHistory(o.Home)
	m.input = newEditor()
	m.subscribe()
	m.updateContextUsed()
	m.loadUsage()
	return m
}

// Run runs the TUI on in/out until the person quits or ctx ends; then,
// when the open session has messages, it prints how to resume it.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer, extra ...tea.ProgramOption) error {
	m := New(ctx, o)
	defer m.close()
	opts := append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out)}, extra...)
	_, err := tea.NewProgram(m, opts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil
	}
	if hint := m.sess.ResumeHint(); err == nil && hint != "" {
		_, err = io.WriteString(out, hint) // as Hermes does: how to come back
	}
	return err
}

// Session is the open session (it changes with /new and /resume).
func (m *Model) Session() *session.Session { return m.sess }

// Runtime is the session runtime (it changes with /model).
func (m *Model) Runtime() *session.Runtime { return m.rt }

// close releases the subscription.
func (m *Model) close() {
	if m.sub != nil {
		m.sub.Close()
	}
}

// subscribe starts receiving the open session's events.
func (m *Model) subscribe() {
	if m.sub != nil {
		m.sub.Close()
	}
	m.sub = m.sess.Subscribe(session.SubscribeOptions{Approver: true})
}

// eventMsg carries one session event into Update.
type eventMsg struct {
	sub *session.Subscription
	ev  session.Event
}

// waitEvent reads the next event of sub.
func waitEvent(ctx context.Context, sub *session.Subscription) tea.Cmd {
	return func() tea.Msg {
		ev, err := sub.Next(ctx)
		if err != nil {
			return nil
		}
		return eventMsg{sub: sub, ev: ev}
	}
}

// noticeMsg is one line of Options.Notices.
type noticeMsg string

// waitNotice reads the next line of Options.Notices.
func (m *Model) waitNotice() tea.Cmd {
	ch, ctx := m.opts.Notices, m.ctx
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case l, ok := <-ch:
			if !ok {
				return nil
			}
			return noticeMsg(l)
		case <-ctx.Done():
			return nil
		}
	}
}

// tickMsg redraws the elapsed times and the box state.
type tickMsg time.Time

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Init starts the event pump, the clock and the notices. The banner, the
// resumed session's recap and Initial wait for the terminal's size
// (greet), so the banner is wrapped at its width.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(waitEvent(m.ctx, m.sub), tick(), m.input.Focus(), m.waitNotice(), waitFirstFrame())
}

// greet prints the banner and the resumed session's recap, then sends
// Initial; it runs once, at the first size (or the first tick, when no
// size comes).
func (m *Model) greet() tea.Cmd {
	if m.greeted {
		return nil
	}
	m.greeted = true
	head := m.banner()
	if recap := m.recap(); recap != "" {
		head += "\n" + recap
	}
	cmds := []tea.Cmd{m.print(head)}
	if m.opts.Initial != "" {
		m.preloaded = true
		cmds = append(cmds, m.send(m.opts.Initial))
	}
	return tea.Batch(cmds...)
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		reflowed := m.sized && msg.Width != m.width
		m.sized = true
		m.width, m.height = msg.Width, msg.Height
		m.input.SetWidth(max(msg.Width-2, 10))
		if reflowed {
			m.reflows++
			return m, tea.Batch(m.greet(), settleReflow(m.reflows))
		}
		return m, m.greet()
	case reflowMsg:
		if int(msg) != m.reflows {
			return m, nil // the width changed again since
		}
		return m, repaintAfterReflow(m.height)
	case printMsg:
		return m, m.nextPrint()
	case readyMsg:
		return m, m.onReady()
	case printedMsg:
		return m, m.onPrinted()
	case eventMsg:
		if msg.sub != m.sub {
			return m, nil // a subscription of a session left with /new
		}
		return m, tea.Batch(m.onEvent(msg.ev), waitEvent(m.ctx, m.sub))
	case approvalDoneMsg:
		if m.approval != nil && m.approval.id == msg.id {
			m.approval = nil
		}
		return m, nil
	case questionDoneMsg:
		if m.question == msg.id {
			m.question = ""
		}
		return m, nil
	case reviewMsg:
		return m, m.printLines(msg.lines...)
	case modelsMsg:
		return m, m.openModelPicker(msg)
	case switchedMsg:
		return m, m.onSwitched(msg)
	case compressedMsg:
		return m, m.onCompressed(msg)
	case tickMsg:
		return m, tea.Batch(tick(), m.greet())
	case redrawMsg:
		if m.turn != nil {
			m.turn.redrawSoon = false
		}
		return m, nil
	case noticeMsg:
		return m, tea.Batch(m.printLines(m.styles.warn.Render(termsafe.Clean(string(msg)))), m.waitNotice())
	case tea.PasteMsg:
		if m.approval == nil && m.picker == nil {
			m.paste(msg.Content)
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

// onKey handles a key press: approvals and pickers first, then the
// global keys, then the editor.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	if key != "ctrl+c" {
		m.hint = ""
	}
	if m.approval != nil && key != "ctrl+c" {
		return m.onApprovalKey(key)
	}
	if m.picker != nil && key != "ctrl+c" {
		return m.onPickerKey(key)
	}
	switch key {
	case "ctrl+c":
		return m.onCtrlC()
	case "ctrl+d":
		if m.input.Value() == "" {
			return m.quit()
		}
	case "ctrl+o":
		return m.expandReasoning()
	case "ctrl+l":
		// Clear the screen, then repaint the live region at its top: a
		// raw clear alone leaves the renderer diffing against rows that
		// are gone.
		return repaintAtTop(ansi.CursorHomePosition + ansi.EraseEntireScreen)
	case "enter":
		if m.complete.active() {
			m.acceptCompletion()
			return nil
		}
		return m.submit()
	case "alt+enter", "ctrl+j", "shift+enter":
		m.input.InsertString("\n")
		return nil
	case "tab":
		if m.complete.active() {
			m.acceptCompletion()
		}
		return nil
	case "esc":
		m.complete = completion{}
		return nil
	case "up", "down":
		if m.complete.active() {
			m.complete.move(key)
			return nil
		}
		if m.historyKey(key) {
			return nil
		}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	m.updateCompletion()
	return cmd
}

// onCtrlC cancels the running turn; twice in a row (or on an idle, empty
// editor after a first press) it quits.
func (m *Model) onCtrlC() tea.Cmd {
	now := m.now()
	again := !m.lastCtrlC.IsZero() && now.Sub(m.lastCtrlC) < 2*time.Second
	m.lastCtrlC = now
	if again {
		return m.quit()
	}
	if m.picker != nil {
		m.picker = nil
		return nil
	}
	if m.turn != nil {
		m.sess.Cancel()
		m.hint = "interrupting… (Ctrl-C again to quit)"
		return nil
	}
	if m.input.Value() != "" {
		m.input.Reset()
		return nil
	}
	m.hint = "Ctrl-C again (or Ctrl-D) to quit"
	return nil
}

// quit quits once what is queued for printing is printed.
func (m *Model) quit() tea.Cmd {
	m.quitting = true
	if m.turn != nil {
		m.sess.Cancel()
	}
	return kickPrinter
}

// submit sends the editor's text, or runs it as a slash command.
func (m *Model) submit() tea.Cmd {
	text := m.input.Value()
	if text == "" || isBlank(text) {
		return nil
	}
	if m.compressing && !isCommand(text) {
		return m.printLines(m.styles.warn.Render("compressing the context: send it again when that is done"))
	}
	m.history.add(text)
	text = m.expandPastes(text)
	m.input.Reset()
	m.complete = completion{}
	if !isCommand(text) && m.answerQuestion(text) {
		return m.printLines(m.styles.user.Render("› " + text))
	}
	if isCommand(text) {
		return m.command(text)
	}

	if !m.preloaded && m.opts.Preload != nil {
		var err error
		if text, err = m.opts.Preload(text); err != nil {
			return m.printError(err)
		}
	}
	m.preloaded = true
	return m.send(text)
}
