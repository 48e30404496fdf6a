package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// fixedNow is the clock of the golden frames.
var fixedNow = time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)

// world is a session runtime in a fresh HERMES_HOME against the fake
// model server (the only fake: the network edge).
type world struct {
	srv       *llmtest.Server
	home, cwd string
	rt        *session.Runtime
	sess      *session.Session
}

func newWorld(t testing.TB, turns ...llmtest.Turn) *world {
	t.Helper()
	return newWorldIn(t, nil, turns...)
}

// newWorldIn is newWorld with prepare run on the new HERMES_HOME before
// the runtime starts (nil = nothing).
func newWorldIn(t testing.TB, prepare func(home string), turns ...llmtest.Turn) *world {
	t.Helper()
	w := &world{srv: llmtest.NewServer(t, turns...), home: t.TempDir(), cwd: t.TempDir()}
	if prepare != nil {
		prepare(w.home)
	}
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + w.srv.URL + "\n" +
		"terminal:\n  cwd: " + w.cwd + "\n" + "compression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w.rt = w.newRuntime(t, "")
	s, err := w.rt.Open(context.Background(), session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.sess = s
	return w
}

// newRuntime starts a runtime on model ("" = config's).
func (w *world) newRuntime(t testing.TB, model string) *session.Runtime {
	t.Helper()
	home := w.home
	loaded, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string {
		if k == "HERMES_HOME" {
			return home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if model != "" {
		if err := loaded.Override("model.default", model); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := session.New(context.Background(), session.Options{Config: loaded, Home: home, UserHome: t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func (w *world) options(t testing.TB) Options {
	return Options{Runtime: w.rt, Session: w.sess, Home: w.home, Cwd: w.cwd, Version: "0.0.0-test",
		Now: func() time.Time { return fixedNow }}
}

// probe wraps the TUI to read its view from inside the program's
// goroutine (a snapshotMsg), so tests never race with Update.
type probe struct{ *Model }

// snapshotMsg asks for the current view.
type snapshotMsg chan string

func (p probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ch, ok := msg.(snapshotMsg); ok {
		ch <- p.Model.View().Content
		return p, nil
	}
	_, cmd := p.Model.Update(msg)
	return p, cmd
}

// start runs the TUI under teatest at width×height; the program is
// stopped when the test ends.
func start(t *testing.T, o Options, width, height int) (*teatest.TestModel, *output) {
	t.Helper()
	m := New(context.Background(), o)
	tm := teatest.NewTestModel(t, probe{m}, teatest.WithInitialTermSize(width, height))
	t.Cleanup(func() {
		_ = tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(time.Until(waitfor.Deadline(t))))
		m.close()
	})
	return tm, &output{r: tm.Output()}
}

// waitFrame polls the view (ANSI stripped, context figures normalised)
// until it contains want, and returns it.
func waitFrame(t *testing.T, tm *teatest.TestModel, want string) string {
	t.Helper()
	deadline := waitfor.Deadline(t)
	last := ""
	for time.Now().Before(deadline) {
		ch := make(snapshotMsg, 1)
		tm.Send(ch)
		select {
		case v := <-ch:
			last = normalise(v)
			if strings.Contains(last, want) {
				return last
			}
		case <-time.After(time.Second):
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the view never showed %q; last frame:\n%s", want, last)
	return ""
}

// output accumulates what the program wrote.
type output struct {
	r   io.Reader
	buf bytes.Buffer
}

// wait waits until the program has written want (ANSI stripped).
func (o *output) wait(t *testing.T, want string) {
	t.Helper()
	seen := 0 // WaitFor passes all it read in this call, each time
	teatest.WaitFor(t, o.r, func(b []byte) bool {
		o.buf.Write(b[seen:])
		seen = len(b)
		return strings.Contains(ansi.Strip(o.buf.String()), want)
	}, teatest.WithDuration(time.Until(waitfor.Deadline(t))), teatest.WithCheckInterval(20*time.Millisecond))
}

// waitCount waits until the program has written want n times (ANSI
// stripped); it fails the test with the count it saw otherwise.
func (o *output) waitCount(t *testing.T, want string, n int) {
	t.Helper()
	seen := 0
	got := 0
	defer func() {
		if got < n {
			t.Errorf("the program wrote %q %d times, want %d", want, got, n)
		}
	}()
	teatest.WaitFor(t, o.r, func(b []byte) bool {
		o.buf.Write(b[seen:])
		seen = len(b)
		got = strings.Count(ansi.Strip(o.buf.String()), want)
		return got >= n
	}, teatest.WithDuration(time.Until(waitfor.Deadline(t))), teatest.WithCheckInterval(20*time.Millisecond))
}

// waitAll waits until the program has written each of wants: a turn's
// answer can be in the live region while blocks printed above it are
// still queued (printer.go), so a test waits for what it checks.
func (o *output) waitAll(t *testing.T, wants ...string) {
	t.Helper()
	for _, want := range wants {
		o.wait(t, want)
	}
}

// waitTurnEnded waits until the live region no longer shows the turn
// whose answer holds answer: the TUI has ended the turn (endTurn), and a
// slash command sent now is not refused with session.ErrBusy. The output
// holds the live region too, so an answer is seen there while its turn
// still runs: TestModelPickerSwitchesModel sent /model then, was refused,
// and waited for a picker that never opened (CI, under -race and load).
// A snapshot is taken in the program's own order: keys sent after it come
// after the turn's end.
func waitTurnEnded(t *testing.T, tm *teatest.TestModel, answer string) {
	t.Helper()
	waitView(t, tm, fmt.Sprintf("the turn answering %q to end", answer), func(f string) bool {
		return !strings.Contains(f, answer) && !strings.Contains(f, "working")
	})
}

// waitIdle waits until no turn is running (the status bar has no
// "working"): an answer shows in the live region before its turn ends.
func waitIdle(t *testing.T, tm *teatest.TestModel) {
	t.Helper()
	waitView(t, tm, "the turn to end", func(f string) bool { return !strings.Contains(f, "working") })
}

// waitView takes snapshots of the view (ANSI stripped) until cond holds
// for one; the test fails with what when the deadline passes first.
func waitView(t *testing.T, tm *teatest.TestModel, what string, cond func(frame string) bool) {
	t.Helper()
	deadline := waitfor.Deadline(t)
	for time.Now().Before(deadline) {
		ch := make(snapshotMsg, 1)
		tm.Send(ch)
		select {
		case v := <-ch:
			if cond(ansi.Strip(v)) {
				return
			}
		case <-time.After(time.Second):
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("waited until the test's deadline for %s", what)
}

func (o *output) String() string { return ansi.Strip(o.buf.String()) }

// normalise strips colours and trailing spaces. Context figures depend
// on the system prompt (paths of temporary directories): they become N.
func normalise(v string) string {
	out := ansi.Strip(v)
	out = regexp.MustCompile(`\d+(\.\d+)?k?/`).ReplaceAllString(out, "N/")
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestGoldenStreamedAnswer: finished paragraphs (a heading, a nested
// list) are printed above as markdown; the one being streamed, here a
// code block whose fence is not closed yet, is rendered as highlighted
// code in the live region.
func TestGoldenStreamedAnswer(t *testing.T) {
	text := "## Plan\n\n- read **the** file\n- fix it\n  1. nested step\n\nThe fix:\n\n" +
		"```go\nfunc main() {\n\tfmt.Println(\"hi\", 42) // greeting"
	if len(text)%8 != 0 {
		t.Fatalf("the streamed prefix is %d bytes, want a multiple of the 8-byte chunks", len(text))
	}
	w := newWorld(t, llmtest.Turn{Text: text + "s\n}\n```\n\nDone.", ChunkSize: 8, StallAfterFrames: 2 + len(text)/8}) // a comment and the role frame first
	tm, out := start(t, w.options(t), 80, 20)
	tm.Type("tell me")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	got := waitFrame(t, tm, "// greeting")
	golden.RequireEqual(t, got)
	out.wait(t, "The fix:")
	for _, want := range []string{"## Plan", "• read the file", "• fix it", "  1. nested step"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the printed paragraphs lack %q:\n%s", want, out)
		}
	}
	// The live code block is highlighted: "func" in the keyword colour.
	ch := make(snapshotMsg, 1)
	tm.Send(ch)
	if raw := <-ch; !strings.Contains(raw, newHighlighter().sgr[tokKeyword]+"func") {
		t.Errorf("the streamed code block is not highlighted:\n%q", raw)
	}
}

// TestGoldenToolCall: a running tool call shows its name and a one-line
// preview; when it ends its outcome (exit code, lines, time) is printed
// with the output folded.
func TestGoldenToolCall(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"seq 1 10"}`}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"sleep 30"}`}}},
	)
	tm, out := start(t, w.options(t), 80, 20)
	tm.Type("count")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	got := waitFrame(t, tm, "sleep 30")
	out.wait(t, "folded")
	printed := out.String()
	for _, want := range []string{"✓ terminal seq 1 10 · exit 0 · 10 lines", "│ 1", "│ 3", "7 more lines folded"} {
		if !strings.Contains(printed, want) {
			t.Errorf("the finished call lacks %q:\n%s", want, printed)
		}
	}
	golden.RequireEqual(t, got)
}

// TestGoldenApproval: a dangerous command waits for [o]nce [s]ession
// [a]lways [d]eny with the whole command shown; d denies it.
func TestGoldenApproval(t *testing.T) {
	long := "rm -rf build-output && echo this command is long enough to wrap at sixty columns of terminal width"
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"` + long + `"}`}}},
		llmtest.Turn{Text: "ok, not removed"},
	)
	tm, out := start(t, w.options(t), 60, 20)
	tm.Type("clean")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	got := waitFrame(t, tm, "eny")
	golden.RequireEqual(t, got)
	tm.Type("d")
	out.wait(t, "ok, not removed")
	out.wait(t, "approval: deny") // the answer is shown
}

// An escape sequence in a command shows in the approval as text: "ESC[2K
// CR" (erase the line) or hidden text would otherwise show a harmless
// command in place of the dangerous one.
func TestApprovalShowsEscapes(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"rm -rf build-output \u001b[8mecho hi"}`}}},
		llmtest.Turn{Text: "ok, not removed"},
	)
	tm, out := start(t, w.options(t), 100, 20)
	tm.Type("clean")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitFrame(t, tm, `rm -rf build-output \x1b[8mecho hi`)
	tm.Type("d")
	out.wait(t, "ok, not removed")
}

// A tool's output printed in the transcript cannot drive the terminal: an
// OSC 52 sequence in it (a file the model cat'ed, an MCP server's result)
// wrote to the clipboard, and cursor moves could rewrite what was shown.
func TestToolOutputEscapesNeutralised(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path":"notes.txt"}`}}},
		llmtest.Turn{Text: "printed"},
	)
	if err := os.WriteFile(filepath.Join(w.cwd, "notes.txt"), []byte("a\x1b]52;c;aGVsbG8=\x07b\x1b[2Jc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := w.options(t)
	o.Yolo = true
	tm, out := start(t, o, 100, 20)
	tm.Type("go")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.waitAll(t, "printed", "abc")
	raw := out.buf.String()
	for _, seq := range []string{"\x1b]52", "\x1b[2J"} {
		if strings.Contains(raw, seq) {
			t.Errorf("the tool output's %q reached the terminal", seq)
		}
	}
	if !strings.Contains(out.String(), "abc") {
		t.Errorf("the tool output's text is not shown:\n%s", out.String())
	}
}

// TestGoldenStatusBar60 and 120: the status bar keeps the model, the
// context bar and YOLO at 60 columns and adds tokens and time at 120.
func TestGoldenStatusBar60(t *testing.T)  { statusBarFrame(t, 60) }
func TestGoldenStatusBar120(t *testing.T) { statusBarFrame(t, 120) }

func statusBarFrame(t *testing.T, width int) {
	w := newWorld(t, llmtest.Turn{Text: "hi", Usage: llmUsage(1200, 34)})
	o := w.options(t)
	o.Yolo = true
	tm, _ := start(t, o, width, 10)
	tm.Type("hello")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	got := waitFrame(t, tm, "↑1.2k")
	golden.RequireEqual(t, got)
}

func llmUsage(in, out int) llm.Usage { return llm.Usage{InputTokens: in, OutputTokens: out} }

// send types text and presses Enter.
func send(tm *teatest.TestModel, text string) {
	tm.Type(text)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
}

// TestModelPickerSwitchesModel: /model lists the provider's /models in a
// picker; choosing one restarts the runtime on it, keeping the session.
func TestModelPickerSwitchesModel(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"})
	w.srv.SetModels(llmtest.Model{ID: "fake-model"}, llmtest.Model{ID: "other-model"})
	o := w.options(t)
	o.Models = w.rt.ListModels
	o.SwitchModel = func(ctx context.Context, model string) (*session.Runtime, *session.Session, error) {
		rt := w.newRuntime(t, model)
		s, err := rt.Open(ctx, session.OpenOptions{Resume: w.sess.ID()})
		return rt, s, err
	}
	tm, out := start(t, o, 80, 24)
	send(tm, "hello")
	out.wait(t, "first")
	waitTurnEnded(t, tm, "first")
	send(tm, "/model")
	waitFrame(t, tm, "other-model")
	tm.Type("other")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.wait(t, "model: other-model")
	waitFrame(t, tm, "other-model │")
	send(tm, "again")
	out.wait(t, "second")
	if strings.Contains(out.String(), "hermes:") {
		t.Errorf("an error was shown:\n%s", out)
	}
	reqs := w.srv.Requests()
	last := reqs[len(reqs)-1].JSON()
	if last["model"] != "other-model" {
		t.Errorf("the next turn used model %v", last["model"])
	}
	if msgs, _ := last["messages"].([]any); len(msgs) < 4 {
		t.Errorf("the session's history was not kept: %d messages", len(msgs))
	}
}

// TestSlashCommands: /new starts a new session, /title names it, /undo
// drops the last exchange, /retry sends it again, an unknown command
// suggests the nearest one, and the history is saved in HERMES_HOME.
func TestSlashCommands(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"}, llmtest.Turn{Text: "three"}, llmtest.Turn{Text: "four"})
	tm, out := start(t, w.options(t), 80, 24)
	send(tm, "first question")
	out.wait(t, "one")
	waitTurnEnded(t, tm, "one")
	send(tm, "/undo")
	out.wait(t, "undone: › first question")
	send(tm, "second question")
	out.wait(t, "two")
	waitTurnEnded(t, tm, "two")
	send(tm, "/retry")
	out.wait(t, "three")
	waitTurnEnded(t, tm, "three")
	reqs := w.srv.Requests()
	msgs, _ := reqs[2].JSON()["messages"].([]any)
	var users []string
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "user" {
			users = append(users, mm["content"].(string))
		}
	}
	if strings.Join(users, "|") != "second question" {
		t.Errorf("after /undo and /retry the model saw user messages %q", users)
	}
	send(tm, "/titel")
	out.wait(t, "did you mean /title?")
	send(tm, "/title My work")
	out.wait(t, `is now titled "My work"`)
	old := w.sess.ID()
	send(tm, "/new")
	out.wait(t, "new session")
	if got, _ := w.rt.Store().Session(context.Background(), old); got.Title != "My work" {
		t.Errorf("title not stored: %+v", got)
	}
	send(tm, "in the new session")
	out.wait(t, "four")
	if msgs, _ := w.srv.Requests()[3].JSON()["messages"].([]any); len(msgs) != 2 {
		t.Errorf("the new session's first request has %d messages, want system + user", len(msgs))
	}
	// /resume goes back, with a recap of the last exchanges.
	send(tm, "/resume "+old)
	out.wait(t, "resumed session "+old)
	out.wait(t, "› second question")
	hist, err := os.ReadFile(filepath.Join(w.home, historyFile))
	if err != nil || !strings.Contains(string(hist), "second question\n/retry\n") {
		t.Errorf("history not saved: %v\n%s", err, hist)
	}
}

// TestCtrlCCancelsThenQuits: Ctrl-C stops the running tool call (the
// "interrupting…" hint goes when the turn has ended); a second Ctrl-C
// quits.
func TestCtrlCCancelsThenQuits(t *testing.T) {
	w := newWorld(t, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"sleep 30"}`}}})
	o := w.options(t)
	clock := fixedNow
	o.Now = func() time.Time { clock = clock.Add(3 * time.Second); return clock }
	tm, out := start(t, o, 80, 24)
	send(tm, "wait")
	waitFrame(t, tm, "sleep 30")
	tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	out.wait(t, "interrupted")
	if w.sess.Busy() {
		t.Errorf("the turn still runs after Ctrl-C")
	}
	// The turn is over: the "interrupting…" hint must not linger. (The
	// "interrupted" line can be printed before the turn's end reaches the
	// view: wait for that, not for the editor, which shows all along.)
	waitIdle(t, tm)
	if f := waitFrame(t, tm, "Ask anything"); strings.Contains(f, "interrupting") {
		t.Errorf("the interrupting hint stayed after the turn ended:\n%s", f)
	}
	tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	waitFrame(t, tm, "Ctrl-C again")
	tm.Send(tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl})
	tm.WaitFinished(t, teatest.WithFinalTimeout(time.Until(waitfor.Deadline(t))))
}

// TestPathCompletion: @ completes file names of the working directory.
func TestPathCompletion(t *testing.T) {
	w := newWorld(t)
	for _, f := range []string{"main.go", "README.md", "docs/guide.md"} {
		p := filepath.Join(w.cwd, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tm, _ := start(t, w.options(t), 80, 24)
	tm.Type("read @d")
	waitFrame(t, tm, "▸ docs/")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	waitFrame(t, tm, "▸ docs/guide.md")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	waitFrame(t, tm, "read @docs/guide.md")
}

// TestEditorPasteNewlineHistory: a large paste is sent whole, Ctrl-J adds
// a line without sending, and ↑ brings back the last message.
func TestEditorPasteNewlineHistory(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "got it"}, llmtest.Turn{Text: "again"})
	tm, out := start(t, w.options(t), 80, 24)
	big := strings.Repeat("0123456789abcdef\n", 4096) // 68 KB
	tm.Send(tea.PasteMsg{Content: big})
	tm.Send(tea.KeyPressMsg{Code: 'j', Mod: tea.ModCtrl})
	tm.Type("end")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.wait(t, "got it")
	body := w.srv.Requests()[0].JSON()
	msgs, _ := body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if got, _ := last["content"].(string); got != big+"\nend" {
		t.Errorf("the pasted message arrived as %d bytes, want %d", len(got), len(big)+4)
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyUp})
	waitFrame(t, tm, "[pasted text #1 · 4097 lines · 68.0 KB]")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.wait(t, "again")
	msgs, _ = w.srv.Requests()[1].JSON()["messages"].([]any)
	last, _ = msgs[len(msgs)-1].(map[string]any)
	if got, _ := last["content"].(string); got != big+"\nend" {
		t.Errorf("the recalled message arrived as %d bytes, want %d", len(got), len(big)+4)
	}
}

// TestReasoningCollapsed: reasoning is folded into one dimmed line once
// the answer starts; Ctrl-O prints it, /verbose prints it in full.
func TestReasoningCollapsed(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{Reasoning: "step one\nstep two\nsecret plan", Text: "the answer"},
		llmtest.Turn{Reasoning: "think again\nverbosely", Text: "second answer"},
	)
	tm, out := start(t, w.options(t), 80, 24)
	send(tm, "why")
	out.wait(t, "▸ reasoning")
	out.wait(t, "3 lines (Ctrl-O shows it)")
	out.wait(t, "the answer")
	tm.Send(tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl})
	out.wait(t, "▾ reasoning")
	out.wait(t, "secret plan")
	send(tm, "/verbose")
	out.wait(t, "verbose: true")
	send(tm, "more")
	out.wait(t, "second answer")
	out.wait(t, "verbosely") // /verbose prints the reasoning in full
}

// TestCompressCommand: /compress summarises the middle of the
// conversation with a model call and keeps the session going.
func TestCompressCommand(t *testing.T) {
	w := newWorld(t)
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + w.srv.URL + "\n" +
		"terminal:\n  cwd: " + w.cwd + "\n" + "compression:\n  enabled: true\n  protect_first_n: 1\n  protect_last_n: 1\n"
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w.rt = w.newRuntime(t, "")
	s, err := w.rt.Open(context.Background(), session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.sess = s
	w.srv.Add(llmtest.Turn{Text: "a1"}, llmtest.Turn{Text: "a2"}, llmtest.Turn{Text: "a3"},
		llmtest.Turn{Text: "SUMMARY of the early talk"}, llmtest.Turn{Text: "after"})
	tm, out := start(t, w.options(t), 80, 24)
	for i, q := range []string{"q1", "q2", "q3"} {
		send(tm, q)
		out.wait(t, fmt.Sprintf("a%d", i+1))
		waitIdle(t, tm)
	}
	send(tm, "/compress")
	out.wait(t, "context compressed")
	send(tm, "next")
	out.wait(t, "after")
	reqs := w.srv.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(body, "SUMMARY of the early talk") || strings.Contains(body, `"q2"`) {
		t.Errorf("the turn after /compress did not use the summary:\n%s", body)
	}
}

// TestStatusBarBoxState: with terminal.backend box the status bar names
// the box's state; at 40 columns the model and YOLO are kept.
func TestStatusBarBoxState(t *testing.T) {
	w := newWorld(t)
	o := w.options(t)
	var state atomic.Value
	state.Store("starting")
	o.BoxState = func() string { return state.Load().(string) }
	o.Yolo = true
	tm, _ := start(t, o, 120, 10)
	waitFrame(t, tm, "box starting")
	state.Store("ready")
	tm.Send(tickMsg(fixedNow))
	waitFrame(t, tm, "box ready")
	tm.Send(tea.WindowSizeMsg{Width: 40, Height: 10})
	f := waitFrame(t, tm, "⚠ YOLO")
	if !strings.Contains(f, "fake-model") || strings.Contains(f, "box ready") {
		t.Errorf("narrow status bar:\n%s", f)
	}
}

// TestRecapOnStartAndClockTicks: started on a resumed session (`hermes
// -c`, `--resume`), the TUI prints the recap of its last exchanges and
// its elapsed clock runs, before any event of the session arrives (the
// recap and the clock once waited behind the event pump and never came).
func TestRecapOnStartAndClockTicks(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "the earlier answer"})
	ctx := context.Background()
	if _, _, err := w.sess.Send(ctx, "an earlier question", session.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.sess.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	o := w.options(t)
	var clock atomic.Int64
	o.Now = func() time.Time { return fixedNow.Add(time.Duration(clock.Add(1)) * time.Second) }
	tm, out := start(t, o, 80, 24)
	out.wait(t, "resumed "+w.sess.ID()+" · last 1 exchange ──")
	out.wait(t, "› an earlier question")
	out.wait(t, "the earlier answer")
	// Every call of the clock is a second later: a tick redraws the status
	// bar with a later time than the first frame's.
	first := waitFrame(t, tm, "│ 00:")
	deadline := waitfor.Deadline(t)
	for time.Now().Before(deadline) {
		if f := waitFrame(t, tm, "│ 00:"); f != first {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the elapsed clock never advanced:\n%s", first)
}

// TestStreamedBlocksSetApart: the blocks of a streamed answer, printed
// one by one as they end, keep the blank line between them that the
// markdown renderer puts between blocks (they were printed flush); a
// block after a tool call's line follows it directly.
func TestStreamedBlocksSetApart(t *testing.T) {
	w := newWorld(t)
	m := New(context.Background(), w.options(t))
	t.Cleanup(m.close)
	m.width, m.height = 80, 24
	for _, ev := range []session.Event{
		{Kind: session.TurnStart, TurnID: "t"},
		{Kind: session.TextDelta, TurnID: "t", Text: "First paragraph.\n\n```sh\necho hi\n"},
		{Kind: session.TextDelta, TurnID: "t", Text: "```\n- one\n- two\n\nLast"},
		{Kind: session.ToolStart, TurnID: "t", Tool: "terminal", Args: `{"command":"true"}`},
		{Kind: session.ToolEnd, TurnID: "t", Tool: "terminal"},
		{Kind: session.TextDelta, TurnID: "t", Text: "After the tool.\n\nAnd more."},
		{Kind: session.ToolStart, TurnID: "t", Tool: "terminal", Args: `{"command":"true"}`},
	} {
		m.onEvent(ev)
	}
	got := ansi.Strip(strings.Join(m.outbox, "\n"))
	want := "First paragraph.\n\n╭ sh\n│ echo hi\n\n• one\n• two\n\nLast\n✓ terminal"
	if !strings.HasPrefix(got, want) {
		t.Errorf("printed:\n%s\nwant it to start with:\n%s", got, want)
	}
	if !strings.HasSuffix(got, "\nAfter the tool.\n\nAnd more.") || strings.Contains(got, "\n\nAfter") {
		t.Errorf("the answer after the tool line is not printed right after it:\n%s", got)
	}
}

// TestListCommandsFitAndHint: /tools wraps its list at the terminal's
// width between names (a long line was cut mid-name by the terminal),
// /skills with none names a command that exists, and a one-line
// reasoning says "1 line".
func TestListCommandsFitAndHint(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Reasoning: "just one line", Text: "the answer"})
	tm, out := start(t, w.options(t), 60, 24)
	send(tm, "/tools")
	out.wait(t, "write_file")
	send(tm, "why")
	out.waitAll(t, "the answer", "· 1 line (Ctrl-O shows it)")
	s := out.String()
	if !strings.Contains(s, "· 1 line (Ctrl-O shows it)") {
		t.Errorf("a one-line reasoning is not said to be 1 line:\n%s", s)
	}
	var tools []string // the lines of the list, between the live region's repaints
	block := s[strings.Index(s, "tools: "):]
	if end := strings.Index(block, "why"); end >= 0 {
		block = block[:end]
	}
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimRight(l, " \r")
		if strings.Contains(l, "_") && !strings.Contains(l, "│") && !strings.HasPrefix(l, "›") {
			tools = append(tools, l)
		}
	}
	if len(tools) < 2 {
		t.Fatalf("/tools printed no wrapped list:\n%s", s)
	}
	for _, l := range tools {
		if ansi.StringWidth(l) > 60 {
			t.Errorf("a /tools line is wider than the 60-column terminal: %q", l)
		}
	}
	for _, name := range w.rt.Tools().Names() {
		if !regexp.MustCompile(`(?m)(^|[ :,])` + name + `(,|$)`).MatchString(strings.Join(tools, "\n")) {
			t.Errorf("tool %s is cut across lines:\n%s", name, strings.Join(tools, "\n"))
		}
	}
}

// A line longer than the terminal soft-wraps in the editor and every row
// of it shows (at 70 columns a long line kept one row and scrolled out of
// view); the editor stops growing at maxEditorRows.
func TestEditorWrapsLongLinesAt70Columns(t *testing.T) {
	w := newWorld(t)
	m := New(context.Background(), w.options(t))
	defer m.close()
	m.Update(tea.WindowSizeMsg{Width: 70, Height: 30})
	words := strings.Repeat("wrapme ", 25) + "thelastword"
	m.input.InsertString(words)
	if h := m.input.Height(); h < 3 {
		t.Fatalf("a %d-character line at 70 columns: editor height %d rows, want ≥ 3", len(words), h)
	}
	view := m.input.View()
	for _, want := range []string{"wrapme", "thelastword"} {
		if !strings.Contains(view, want) {
			t.Errorf("the editor does not show %q:\n%s", want, view)
		}
	}
	for _, l := range strings.Split(view, "\n") {
		if n := ansi.StringWidth(l); n > 70 {
			t.Errorf("an editor row is %d columns wide at 70: %q", n, l)
		}
	}
	m.input.InsertString(strings.Repeat(" more words", 200))
	if h := m.input.Height(); h != maxEditorRows {
		t.Errorf("a long input: editor height %d, want %d (then it scrolls)", h, maxEditorRows)
	}
	if !strings.HasSuffix(strings.TrimSpace(m.input.Value()), "more words") {
		t.Error("input was cut short")
	}
}

// The /model picker lists the current model even when the provider's list
// does not, marks it, and opens on it (on a long list it was out of view).
func TestModelPickerListsAndMarksTheCurrentModel(t *testing.T) {
	w := newWorld(t)
	m := New(context.Background(), w.options(t))
	defer m.close()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	var listed []string
	for i := range 30 {
		listed = append(listed, fmt.Sprintf("vendor/model-%02d", i))
	}
	for _, models := range [][]string{listed, append(slices.Clone(listed), "fake-model")} {
		m.openModelPicker(modelsMsg{models: models})
		view := ansi.Strip(m.picker.view(m))
		if !regexp.MustCompile(`(?m)^▸ fake-model +\(current\)$`).MatchString(view) {
			t.Errorf("the picker over %d models does not show the current model marked and selected:\n%s", len(models), view)
		}
		if got := m.picker.items[m.picker.sel].value; got != "fake-model" {
			t.Errorf("the picker opens on %q, want the current model", got)
		}
	}
}
