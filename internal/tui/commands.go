package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/agnivade/levenshtein"

	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// command is one slash command.
type command struct {
	name, args, about string
}

// commands are the slash commands, in /help order. Aliases are listed
// after their command with the same about.
var commands = []command{
	{"/help", "", "list the commands"},
	{"/new", "", "start a new session"},
	{"/reset", "", "same as /new"},
	{"/model", "[NAME]", "switch the model (a picker without NAME)"},
	{"/resume", "[ID|TITLE]", "resume a session (a picker without an argument)"},
	{"/sessions", "", "pick a recent session to resume"},
	{"/title", "TEXT", "name this session"},
	{"/retry", "", "send the last message again (its answer is dropped)"},
	{"/undo", "", "drop the last exchange"},
	{"/compress", "", "compress the conversation's context now"},
	{"/usage", "", "token usage of this session"},
	{"/tools", "", "list the enabled tools"},
	{"/skills", "", "list the installed skills"},
	{"/memory", "", "show the persistent memory"},
	{"/yolo", "", "toggle dangerous-command approvals"},
	{"/verbose", "", "toggle full reasoning and tool output"},
	{"/quit", "", "leave (also /exit, Ctrl-D)"},
	{"/exit", "", "leave"},
}

// isCommand reports whether text is a slash command (not a path like
// /etc/hosts followed by more text on other lines).
func isCommand(text string) bool {
	return strings.HasPrefix(text, "/") && !strings.Contains(strings.TrimSpace(text), "\n")
}

// command runs one slash command line.
func (m *Model) command(line string) tea.Cmd {
	fields := strings.Fields(line)
	name, arg := strings.ToLower(fields[0]), strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), fields[0]))
	switch name {
	case "/quit", "/exit", "/q":
		return m.quit()
	case "/help":
		return m.printLines(m.styles.dim.Render(line), m.helpText())
	case "/verbose":
		m.verbose = !m.verbose
		return m.printLines(m.styles.dim.Render(fmt.Sprintf("verbose: %v", m.verbose)))
	case "/yolo":
		m.yolo = !m.yolo
		m.rt.Approvals().SetYolo(m.yolo)
		state := "off: dangerous commands ask for approval"
		if m.yolo {
			state = "on: dangerous commands run without asking (the hardline list still applies)"
		}
		return m.printLines(m.styles.warn.Render("yolo " + state))
	}
	if !knownCommand(name) {
		return m.printError(unknownCommand(name))
	}
	if m.turn != nil || m.compressing || m.sess.Busy() {
		return m.printError(session.ErrBusy)
	}
	echo := m.printLines(m.styles.dim.Render(line)) // queued before what the command prints
	var out tea.Cmd
	switch name {
	case "/new", "/reset":
		out = m.newSession()
	case "/model":
		out = m.modelCommand(arg)
	case "/resume", "/sessions":
		out = m.resumeCommand(arg)
	case "/title":
		out = m.titleCommand(arg)
	case "/retry":
		out = m.retry()
	case "/undo":
		text, err := m.sess.Undo(m.ctx)
		if err != nil {
			return m.printError(err)
		}
		m.updateContextUsed()
		out = m.printLines(m.styles.dim.Render("undone: › " + preview(text, m.width-12)))
	case "/compress":
		out = m.compress()
	case "/usage":
		out = m.usageCommand()
	case "/tools":
		out = m.printLines(wrap("tools: "+termsafe.Clean(strings.Join(m.rt.Tools().Names(), ", ")), m.width))
	case "/skills":
		out = m.skillsCommand()
	case "/memory":
		out = m.memoryCommand()
	default:
		return m.printError(unknownCommand(name))
	}
	return tea.Sequence(echo, out)
}

// knownCommand reports whether name is one of commands.
func knownCommand(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return true
		}
	}
	return false
}

// unknownCommand names the nearest command.
func unknownCommand(name string) error {
	best, dist := "", 1<<30
	for _, c := range commands {
		if d := levenshtein.ComputeDistance(name, c.name); d < dist {
			best, dist = c.name, d
		}
	}
	if dist <= 3 {
		return fmt.Errorf("unknown command %s: did you mean %s? (/help lists them)", name, best)
	}
	return fmt.Errorf("unknown command %s (/help lists them)", name)
}

func (m *Model) helpText() string {
	var b strings.Builder
	for _, c := range commands {
		left := strings.TrimSpace(c.name + " " + c.args)
		fmt.Fprintf(&b, "  %-22s %s\n", left, m.styles.dim.Render(c.about))
	}
	b.WriteString(m.styles.dim.Render("  Enter sends · Alt-Enter/Ctrl-J newline · ↑/↓ history · Tab completes · @path attaches a file path\n" +
		"  Ctrl-C interrupts the turn (twice quits) · Ctrl-O shows the last reasoning · Ctrl-D on empty input quits"))
	return b.String()
}

// newSession replaces the open session with a new one.
func (m *Model) newSession() tea.Cmd {
	s, err := m.rt.Open(m.ctx, session.OpenOptions{Source: m.sess.Source()})
	if err != nil {
		return m.printError(err)
	}
	return tea.Batch(m.switchSession(s), m.printLines(fmt.Sprintf("new session %s", s.ID())))
}

// switchSession makes s the open session; the returned command reads
// its events.
func (m *Model) switchSession(s *session.Session) tea.Cmd {
	old := m.sess
	m.sess = s
	m.subscribe()
	if old != s {
		old.Close()
	}
	m.loadUsage()
	m.preloaded = true
	m.updateContextUsed()
	return waitEvent(m.ctx, m.sub)
}

// loadUsage reads the open session's token counts from the store (none
// for a session not stored yet).
func (m *Model) loadUsage() {
	m.usage = usageTotals{}
	id := m.sess.ID()
	if m.rt.Recorder().Pending(id) {
		return
	}
	s, err := m.rt.Store().Session(m.ctx, id)
	if err != nil {
		return // a new session: nothing used yet
	}
	m.usage = usageTotals{input: s.Usage.InputTokens, output: s.Usage.OutputTokens,
		cached: s.Usage.CacheReadTokens, calls: s.APICallCount}
}

func (m *Model) titleCommand(title string) tea.Cmd {
	if title == "" {
		return m.printError(errors.New("usage: /title TEXT"))
	}
	id := m.sess.ID()
	if err := m.rt.Recorder().Ensure(m.ctx, id); err != nil {
		return m.printError(err)
	}
	if err := m.rt.Store().SetTitle(m.ctx, id, title); err != nil {
		return m.printError(err)
	}
	return m.printLines(fmt.Sprintf("session %s is now titled %q", id, title))
}

// retry drops the last exchange and sends its message again.
func (m *Model) retry() tea.Cmd {
	text, err := m.sess.Undo(m.ctx)
	if err != nil {
		return m.printError(err)
	}
	return m.send(text)
}

func (m *Model) usageCommand() tea.Cmd {
	id := m.sess.ID()
	if m.rt.Recorder().Pending(id) {
		return m.printLines("input 0 · output 0 · cache read 0 · api calls 0")
	}
	s, err := m.rt.Store().Session(m.ctx, id)
	if err != nil {
		return m.printError(err)
	}
	return m.printLines(fmt.Sprintf("input %d · output %d · cache read %d · api calls %d · context ~%s of %s",
		s.Usage.InputTokens, s.Usage.OutputTokens, s.Usage.CacheReadTokens, s.APICallCount, tokens(m.ctxUsed), tokens(m.rt.ContextWindow())))
}

func (m *Model) skillsCommand() tea.Cmd {
	lib := m.rt.Skills()
	if lib == nil {
		return m.printLines("skills are off")
	}
	list, _ := lib.List("")
	if len(list) == 0 {
		return m.printLines(wrap("no skills installed: the agent creates them as it works, or run `hermes skills create NAME --description TEXT`", m.width))
	}
	lines := []string{plural(len(list), "skill") + ":"}
	for _, s := range list {
		lines = append(lines, fmt.Sprintf("  %s %s", m.styles.tool.Render(s.Name), m.styles.dim.Render(preview(s.Description, m.width-len(s.Name)-6))))
	}
	return m.printLines(lines...)
}

func (m *Model) memoryCommand() tea.Cmd {
	mem := m.rt.Memory()
	if mem == nil {
		return m.printLines("memory is off")
	}
	var lines []string
	for _, t := range []memory.Target{memory.TargetMemory, memory.TargetUser} {
		st, err := mem.State(t)
		if err != nil {
			return m.printError(err)
		}
		lines = append(lines, m.styles.tool.Render(fmt.Sprintf("%s (%d/%d chars)", t.FileName(), st.Chars, st.Limit)))
		if len(st.Entries) == 0 {
			lines = append(lines, m.styles.dim.Render("  (empty)"))
		}
		for _, e := range st.Entries {
			lines = append(lines, "  • "+preview(e, m.width-6))
		}
	}
	return m.printLines(lines...)
}

// resumeCommand resumes ref, or opens the sessions picker.
func (m *Model) resumeCommand(ref string) tea.Cmd {
	if ref != "" {
		return m.resume(ref)
	}
	list, err := m.rt.Store().List(m.ctx, store.ListOptions{Limit: 20, NonEmpty: true})
	if err != nil {
		return m.printError(err)
	}
	if len(list) == 0 {
		return m.printLines("no sessions yet")
	}
	var items []pickItem
	for _, s := range list {
		title := s.Title
		if title == "" {
			title = s.Preview
		}
		label := fmt.Sprintf("%s  %s  %s", s.UpdatedAt.Local().Format("Jan _2 15:04"), s.ID, preview(title, 50))
		items = append(items, pickItem{value: s.ID, label: label})
	}
	m.picker = &picker{title: "resume a session (↑/↓, Enter, Esc)", items: items, choose: m.resume}
	return nil
}

// resume opens the stored session ref and shows its recap.
func (m *Model) resume(ref string) tea.Cmd {
	s, err := m.rt.Open(m.ctx, session.OpenOptions{Resume: ref})
	if err != nil {
		return m.printError(err)
	}
	pump := m.switchSession(s)
	out := []string{fmt.Sprintf("resumed session %s", s.ID())}
	if r := m.recap(); r != "" {
		out = append(out, r)
	}
	return tea.Batch(pump, m.printLines(out...))
}

// modelsMsg carries the model list for the picker.
type modelsMsg struct {
	models []string
	err    error
}

// switchedMsg carries the runtime restarted on another model.
type switchedMsg struct {
	rt    *session.Runtime
	sess  *session.Session
	model string
	err   error
}

// modelCommand switches to name, or fetches the list for the picker.
func (m *Model) modelCommand(name string) tea.Cmd {
	if name != "" {
		return m.switchModel(name)
	}
	if m.opts.Models == nil {
		return m.printLines("model: " + termsafe.Clean(m.rt.Model()) + " (give /model NAME to switch)")
	}
	ctx, list := m.ctx, m.opts.Models
	return tea.Sequence(m.printLines(m.styles.dim.Render("fetching the model list…")), func() tea.Msg {
		var models []string
		err := withTimeout(ctx, 10*time.Second, func(c context.Context) error {
			var err error
			models, err = list(c)
			return err
		})
		return modelsMsg{models: models, err: err}
	})
}

func (m *Model) openModelPicker(msg modelsMsg) tea.Cmd {
	current := m.rt.Model()
	if msg.err != nil || len(msg.models) == 0 {
		why := "the provider lists none"
		if msg.err != nil {
			why = msg.err.Error()
		}
		return m.printLines(fmt.Sprintf("model list unavailable (%s); current model: %s; type /model NAME",
			why, termsafe.Clean(current)))
	}
	m.picker = modelPicker(msg.models, current, m.switchModel)
	return nil
}

// modelPicker lists models sorted, with current always in the list (a
// custom endpoint or a long list may not have it), marked "(current)" and
// selected, so it shows when the picker opens.
func modelPicker(models []string, current string, choose func(string) tea.Cmd) *picker {
	models = slices.Clone(models)
	if current != "" && !slices.Contains(models, current) {
		models = append(models, current)
	}
	sort.Strings(models)
	p := &picker{title: "switch model (type to filter, ↑/↓, Enter, Esc)", choose: choose, filterable: true}
	for i, id := range models {
		label := id
		if id == current {
			label += "  (current)"
			p.sel = i
		}
		p.items = append(p.items, pickItem{value: id, label: label})
	}
	return p
}

// switchModel restarts the runtime on name, keeping the session.
func (m *Model) switchModel(name string) tea.Cmd {
	if m.opts.SwitchModel == nil {
		return m.printLines("switching models is not available here; restart with -m " + name)
	}
	ctx, sw := m.ctx, m.opts.SwitchModel
	m.sub.Close()
	return func() tea.Msg {
		rt, s, err := sw(ctx, name)
		return switchedMsg{rt: rt, sess: s, model: name, err: err}
	}
}

func (m *Model) onSwitched(msg switchedMsg) tea.Cmd {
	if msg.err != nil {
		m.subscribe()
		return tea.Batch(m.printError(msg.err), waitEvent(m.ctx, m.sub))
	}
	m.rt, m.sess = msg.rt, msg.sess
	m.subscribe()
	m.updateContextUsed()
	return tea.Batch(m.printLines(termsafe.Clean(fmt.Sprintf("model: %s via %s", m.rt.Model(), m.rt.ProviderName()))), waitEvent(m.ctx, m.sub))
}

// compressedMsg reports the end of /compress.
type compressedMsg struct {
	done bool
	err  error
}

// compress summarises the conversation's middle in the background;
// messages wait until it ends.
func (m *Model) compress() tea.Cmd {
	m.compressing = true
	s, ctx := m.sess, m.ctx
	return tea.Sequence(m.printLines(m.styles.dim.Render("compressing the context…")), func() tea.Msg {
		done, err := s.Compress(ctx)
		return compressedMsg{done: done, err: err}
	})
}

func (m *Model) onCompressed(msg compressedMsg) tea.Cmd {
	m.compressing = false
	m.updateContextUsed()
	switch {
	case msg.err != nil:
		return m.printError(msg.err)
	case !msg.done:
		return m.printLines("nothing to compress: the conversation is within compression.protect_first_n + protect_last_n messages")
	}
	return m.printLines(fmt.Sprintf("context compressed: ~%s tokens now", tokens(m.ctxUsed)))
}
