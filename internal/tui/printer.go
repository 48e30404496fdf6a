package tui

import (
	"regexp"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Printing above the live region.
//
// bubbletea's inline renderer (cursedRenderer.insertAbove, v2.1.1) prints
// a block by scrolling the screen by the block's rows, moving the cursor
// up by those rows plus the live region's height, inserting lines there
// and writing the block; it then assumes the live region sits, intact,
// right below the block. That holds only when the block fits in the
// rows above the live region: the terminal stops the cursor-up at the top
// row, so a taller block (a long answer's last paragraph, /help in a short
// pane) leaves the cursor rows below where the renderer believes the live
// region starts, and the region itself was scrolled off. Each later frame
// is drawn as a diff against that belief: only the changed cells (the
// clock's last digits, a typed key) appear, at wrong places. A frame of
// another height is erased and redrawn whole, which hid the fault when
// the print came before the frame that dropped the finished answer.
//
// So the TUI never hands bubbletea a block taller than printRoom rows and
// never draws a live region taller than liveMax rows (their sum is the
// terminal's height), never a line as wide as the terminal (bubbletea
// counts a line of exactly k×width columns as k+1 rows), and prints
// blocks one at a time, in order, through the outbox.

// firstFrameWait is how long after the start the first print waits: the
// renderer believes the live region is the whole screen until it has
// drawn the first frame (at its next tick, 1/60 s), and a print before
// that does not fit above it.
const firstFrameWait = 100 * time.Millisecond

// readyMsg says the first frame has been drawn: prints may start.
type readyMsg struct{}

// waitFirstFrame sends readyMsg after firstFrameWait.
func waitFirstFrame() tea.Cmd {
	return tea.Tick(firstFrameWait, func(time.Time) tea.Msg { return readyMsg{} })
}

// printMsg asks Update to print what the outbox holds.
type printMsg struct{}

// printedMsg says bubbletea has printed the chunk in flight.
type printedMsg struct{}

// kickPrinter is the command that sends a printMsg.
func kickPrinter() tea.Msg { return printMsg{} }

// printRoom is the most rows one print may take: the rows above the
// tallest live region.
func (m *Model) printRoom() int {
	return max(m.height/4, 2)
}

// liveMax is the most rows the live region may take.
func (m *Model) liveMax() int {
	return max(m.height-m.printRoom(), 1)
}

// print queues block to be printed above the live region, after what is
// queued already, and returns the command that starts the printer.
// Whether or not that command runs, block is printed in its turn (Update
// alone sets a chunk in flight: a command dropped on some path cannot
// stall the printer).
func (m *Model) print(block string) tea.Cmd {
	w := max(m.width-1, 10)
	for _, line := range strings.Split(block, "\n") {
		line = strings.ReplaceAll(line, "\t", "    ")
		if ansi.StringWidth(line) <= w {
			m.outbox = append(m.outbox, line)
			continue
		}
		m.outbox = append(m.outbox, keepStyles(strings.Split(ansi.Hardwrap(ansi.Wrap(line, w, " "), w, true), "\n"))...)
	}
	return kickPrinter
}

// sgrSeq matches an SGR escape sequence (colours, bold...).
var sgrSeq = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// keepStyles makes each row of a wrapped line carry its own styles: the
// SGR sequences in force at the end of a row open the next one, and a
// row that ends styled resets them (the rows may be printed apart).
func keepStyles(rows []string) []string {
	var active []string
	for i, row := range rows {
		if len(active) > 0 {
			row = strings.Join(active, "") + row
		}
		for _, seq := range sgrSeq.FindAllStringSubmatch(row, -1) {
			switch p := seq[1]; {
			case p == "" || p == "0":
				active = nil
			case strings.HasPrefix(p, "0;"):
				active = []string{seq[0]}
			default:
				active = append(active, seq[0])
			}
		}
		if len(active) > 0 {
			row += ansi.ResetStyle
		}
		rows[i] = row
	}
	return rows
}

// nextPrint prints the next printRoom rows of the outbox unless a print
// is in flight; when the outbox is empty and the person quit, it quits.
// Only Update's return paths call it: the command it returns must run.
func (m *Model) nextPrint() tea.Cmd {
	if m.printing || !m.ready {
		return nil
	}
	if len(m.outbox) == 0 {
		if m.quitting {
			return tea.Quit
		}
		return nil
	}
	room, w := m.printRoom(), max(m.width-1, 10)
	var rows []string
	for len(m.outbox) > 0 {
		// Rows were wrapped when queued; the terminal may have narrowed since.
		pieces := []string{m.outbox[0]}
		if ansi.StringWidth(m.outbox[0]) > w {
			pieces = strings.Split(ansi.Hardwrap(m.outbox[0], w, true), "\n")
		}
		if len(rows)+len(pieces) > room {
			if len(rows) == 0 { // one row that now takes more than room rows
				rows = pieces[:room]
				m.outbox[0] = strings.Join(pieces[room:], "")
			}
			break
		}
		rows = append(rows, pieces...)
		m.outbox = m.outbox[1:]
	}
	m.printing = true
	return tea.Sequence(tea.Println(strings.Join(rows, "\n")), func() tea.Msg { return printedMsg{} })
}

// onReady starts the printer.
func (m *Model) onReady() tea.Cmd {
	m.ready = true
	return m.nextPrint()
}

// onPrinted prints the next chunk of the outbox.
func (m *Model) onPrinted() tea.Cmd {
	m.printing = false
	return m.nextPrint()
}

// repaintAtTop writes clear (a raw sequence that empties the screen and
// homes the cursor), then has bubbletea repaint the live region at the
// top: a raw clear alone leaves the renderer diffing against rows that
// are gone.
func repaintAtTop(clear string) tea.Cmd {
	return tea.Sequence(tea.Raw(clear), tea.ClearScreen)
}

// reflowSettle is how long the size must stay the same after a change of
// width before the screen is repainted (repaintAfterReflow): dragging a
// window's edge sends a size per step, and each repaint scrolls a screen
// into the scrollback.
const reflowSettle = 100 * time.Millisecond

// reflowMsg is the n-th width change, settled if no other came since.
type reflowMsg int

// settleReflow sends reflowMsg(n) after reflowSettle.
func settleReflow(n int) tea.Cmd {
	return tea.Tick(reflowSettle, func(time.Time) tea.Msg { return reflowMsg(n) })
}

// repaintAfterReflow handles a change of the terminal's width. Terminals
// (tmux, kitty, iTerm2, VTE) re-wrap the rows on screen to the new
// width, the live region's rows among them, so the renderer no longer
// knows where its region is: its erase leaves stale fragments and its
// later frames, drawn as diffs, land at wrong places (CI saw the status
// bar reduced to the clock's digits). So the screen, printed rows and
// all, is scrolled into the scrollback (rows newlines from the bottom
// row: nothing is lost, unlike an erase) and the region is repainted at
// the top, as Ctrl-L does, once the size has settled (reflowSettle).
func repaintAfterReflow(rows int) tea.Cmd {
	return repaintAtTop(ansi.CursorPosition(1, rows) + strings.Repeat("\n", rows) + ansi.CursorHomePosition)
}
