package main_test

// End-to-end tests of the TUI: the built binary runs in a tmux pane (a
// real terminal) against the fake model server; keys are typed with
// send-keys and the screen is read with capture-pane.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// tmuxPane is hermes running in a detached tmux session of its own server.
type tmuxPane struct {
	t      *testing.T
	socket string
}

// startTUI starts hermes with args in a width×height tmux pane; it skips
// the test when tmux is missing.
func (e *e2e) startTUI(width, height int, args ...string) *tmuxPane {
	e.t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		e.t.Skip("tmux is not installed (apt-get install tmux; .ci/run installs it)")
	}
	p := &tmuxPane{t: e.t, socket: filepath.Join(e.t.TempDir(), "tmux.sock")}
	env := append(append(e.baseEnv(), e.env...), "TERM=xterm-256color")
	script := "cd " + shellQuote(e.workspace) + " && env -i"
	for _, kv := range env {
		script += " " + shellQuote(kv)
	}
	script += " " + shellQuote(hermesBin)
	for _, a := range args {
		script += " " + shellQuote(a)
	}
	script += "; echo; echo HERMES-EXITED $?; sleep 30"
	cmd := exec.Command("tmux", "-S", p.socket, "-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "sh", "-c", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("starting tmux: %v\n%s", err, out)
	}
	e.t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// keys sends tmux key names ("Enter", "C-c") or literal text with -l.
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", p.socket, "send-keys"}, keys...)...).CombinedOutput(); err != nil {
		p.t.Fatalf("send-keys %q: %v\n%s", keys, err, out)
	}
}

// typeText types text literally.
func (p *tmuxPane) typeText(text string) {
	p.t.Helper()
	p.keys("-l", text)
}

// screen is the pane's content with its scrollback.
func (p *tmuxPane) screen() string {
	out, _ := exec.Command("tmux", "-S", p.socket, "capture-pane", "-p", "-J", "-S", "-200").Output()
	return string(out)
}

// waitFor waits until the screen contains want.
func (p *tmuxPane) waitFor(want string) string {
	p.t.Helper()
	deadline := waitfor.Deadline(p.t)
	for {
		s := p.screen()
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %q:\n%s", want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitGone waits until the screen no longer shows text.
func (p *tmuxPane) waitGone(text string) {
	p.t.Helper()
	deadline := waitfor.Deadline(p.t)
	for strings.Contains(p.screen(), text) {
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen still shows %q:\n%s", text, p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTUIEndToEnd drives the TUI as a person does: a prompt and its
// streamed answer, /help, /model (picker from the provider's /models),
// /new, a dangerous command approved inline, a running tool interrupted
// with Ctrl-C, and Ctrl-D to quit.
func TestTUIEndToEnd(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{Text: "Hello from the **fake** model.\n\n```go\nfmt.Println(42)\n```\n", ChunkSize: 7},
		toolTurn("call_rm", "terminal", map[string]any{"command": "rm -rf scratch-dir"}),
		llmtest.Turn{Text: "Removed it."},
		toolTurn("call_sleep", "terminal", map[string]any{"command": "sleep 30 && touch slept"}),
		llmtest.Turn{Text: "never used"},
	)
	e.srv.SetModels(llmtest.Model{ID: "anthropic/claude-sonnet-4.6"}, llmtest.Model{ID: "openai/gpt-5-mini"})
	e.configureModel()
	if err := os.MkdirAll(filepath.Join(e.workspace, "scratch-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := e.startTUI(100, 40)
	p.waitFor("Hermes Agent")
	p.waitFor("anthropic/claude-sonnet-4.6") // the status bar

	p.typeText("say hello")
	p.keys("Enter")
	p.waitFor("Hello from the fake model.")
	p.waitFor("fmt.Println(42)")

	p.typeText("/help")
	p.keys("Enter")
	p.waitFor("drop the last exchange")

	p.typeText("/model")
	p.keys("Enter")
	p.waitFor("openai/gpt-5-mini")
	p.keys("Escape")
	// A lone Escape is told from Alt-key by a pause: wait for the picker to close.
	p.waitGone("switch model")

	p.typeText("/new")
	p.keys("Enter")
	p.waitFor("new session")

	p.typeText("clean the scratch dir")
	p.keys("Enter")
	s := p.waitFor("[o]nce")
	if !strings.Contains(s, "rm -rf scratch-dir") {
		t.Fatalf("the approval does not show the command:\n%s", s)
	}
	p.keys("o")
	p.waitFor("Removed it.")
	if _, err := os.Stat(filepath.Join(e.workspace, "scratch-dir")); !os.IsNotExist(err) {
		t.Errorf("the approved command did not run: %v", err)
	}

	p.typeText("wait a bit")
	p.keys("Enter")
	p.waitFor("sleep 30")
	time.Sleep(300 * time.Millisecond)
	p.keys("C-c")
	p.waitFor("interrupted")

	p.keys("C-d")
	p.waitFor("HERMES-EXITED 0")
	p.waitFor("Resume this session with: hermes --resume ")
	if _, err := os.Stat(filepath.Join(e.workspace, "slept")); err == nil {
		t.Errorf("the interrupted command ran to the end")
	}
	if s := p.screen(); strings.Contains(s, "hermes:") {
		t.Errorf("an error was shown:\n%s", s)
	}
	hist, err := os.ReadFile(filepath.Join(e.home, "tui_history"))
	if err != nil || !strings.Contains(string(hist), "say hello") {
		t.Errorf("the input history was not saved in HERMES_HOME: %v %q", err, hist)
	}
}

// visible is the pane's visible rows (no scrollback), trailing blank
// rows dropped.
func (p *tmuxPane) visible() []string {
	out, _ := exec.Command("tmux", "-S", p.socket, "capture-pane", "-p").Output()
	return strings.Split(strings.TrimRight(string(out), "\n "), "\n")
}

// waitBottom waits until the last visible rows are the
// editor showing editor and the complete status bar (the model's name,
// the context bar and the clock), and returns the visible rows.
func (p *tmuxPane) waitBottom(editor, model string) []string {
	p.t.Helper()
	return p.waitBottomBelow("", editor, model)
}

// waitBottomBelow is waitBottom that also waits until a visible row
// above the editor contains above ("" for any).
func (p *tmuxPane) waitBottomBelow(above, editor, model string) []string {
	p.t.Helper()
	return p.waitRows(func(rows []string) bool {
		return strings.Contains(strings.Join(rows[:len(rows)-2], "\n"), above)
	}, strconv.Quote(above), editor, model)
}

// waitOnlyLiveRegion waits until the visible rows are the editor showing
// editor and the complete status bar, and nothing else.
func (p *tmuxPane) waitOnlyLiveRegion(editor, model string) {
	p.t.Helper()
	p.waitRows(func(rows []string) bool { return len(rows) == 2 }, "nothing", editor, model)
}

// waitRows waits until the last visible rows are the editor showing
// editor and the complete status bar and above(rows) holds, and returns
// the visible rows; want says what above wants, for the failure.
func (p *tmuxPane) waitRows(above func(rows []string) bool, want, editor, model string) []string {
	p.t.Helper()
	status := regexp.MustCompile(`^` + regexp.QuoteMeta(model) + ` │ [█░]+ .* │ \d\d:\d\d`)
	deadline := waitfor.Deadline(p.t)
	for {
		rows := p.visible()
		n := len(rows)
		if n >= 2 && strings.HasPrefix(rows[n-2], "› "+editor) && status.MatchString(rows[n-1]) && above(rows) {
			return rows
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the editor (%q) and the status bar are not the last rows, below %s:\n%s", editor, want, strings.Join(rows, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTUIBigAnswerKeepsLiveRegion: after an answer whose last paragraph
// is ~105 KB, streamed while the person types, the editor (with what was
// typed) and the status bar are still drawn at the bottom; a narrower
// pane mid-print keeps them and the rest of the answer in place; /help
// in a 14-row pane leaves them in place too; Ctrl-L clears the screen and
// redraws them. (Prints taller than the rows above the live region left
// bubbletea drawing only the changed cells, at wrong places.)
func TestTUIBigAnswerKeepsLiveRegion(t *testing.T) {
	var para strings.Builder
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor")
	for i := 0; para.Len() < 105<<10; i++ {
		para.WriteString(words[i%len(words)] + " ")
	}
	text := "# Big answer\n\n" + para.String() + "THE-END\n"
	e := newE2E(t, llmtest.Turn{Text: text, ChunkSize: 512, FrameEvery: 15 * time.Millisecond}) // about 3 s
	e.configureModel()
	p := e.startTUI(120, 40)
	p.waitFor("anthropic/claude-sonnet-4.6")
	p.typeText("give me a big answer")
	p.keys("Enter")
	p.waitFor("Big answer")
	for i := 1; i <= 5; i++ {
		p.typeText("x" + strconv.Itoa(i))
		time.Sleep(250 * time.Millisecond)
	}
	// The answer is printed above the live region a few rows per frame
	// (printRoom), so the editor and the status bar reach the bottom
	// before the end of a long answer is printed: wait for both.
	p.waitBottomBelow("THE-END", "x1x2x3x4x5", "anthropic/claude-sonnet-4.6")
	p.keys("C-u") // clear the editor
	p.waitBottom("", "anthropic/claude-sonnet-4.6")

	// A width change re-wraps the rows on screen, the live region's too,
	// often while the answer is still being printed above it: the TUI
	// scrolls the screen into the scrollback, repaints the editor and the
	// status bar at the top and prints the rest of the answer, if any,
	// above them. (Bubbletea alone left a fragment of a re-wrapped row
	// between the answer and a status bar reduced to the clock's digits.)
	_ = exec.Command("tmux", "-S", p.socket, "resize-window", "-x", "100", "-y", "14").Run()
	p.waitRows(func(rows []string) bool {
		if len(rows) >= 3 {
			return strings.HasSuffix(rows[len(rows)-3], "THE-END")
		}
		history, _ := exec.Command("tmux", "-S", p.socket, "capture-pane", "-p", "-S", "-").Output()
		return strings.Contains(string(history), "THE-END\n")
	}, `a row ending "THE-END" (or nothing, "THE-END" in the scrollback)`, "", "anthropic/claude-sonnet-4.6")
	p.typeText("/help")
	p.keys("Enter")
	p.waitFor("input quits")
	p.typeText("abc")
	p.waitBottom("abc", "anthropic/claude-sonnet-4.6")

	p.keys("C-l") // clears the screen and redraws the editor and status bar at its top
	p.waitOnlyLiveRegion("abc", "anthropic/claude-sonnet-4.6")
}
