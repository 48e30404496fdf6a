package main_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// openPTY returns the master and slave ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pty slave: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// hostileAnswer is a model answer with an OSC 52 clipboard write, a cursor
// movement, a screen clear and a carriage-return overwrite.
const hostileAnswer = "Done.\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07\x1b[1A\x1b[2J\rAll good\nbye"

// TestAnswerOnTerminalIsNeutralised: the model's answer printed to a
// terminal keeps its text and newlines but loses its control sequences,
// streamed or with -Q; with -Q into a pipe the bytes are kept as sent.
func TestAnswerOnTerminalIsNeutralised(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: hostileAnswer, ChunkSize: 3}, llmtest.Turn{Text: hostileAnswer}, llmtest.Turn{Text: hostileAnswer})
	e.configureModel()
	for _, quiet := range []bool{false, true} {
		master, slave := openPTY(t)
		ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
		args := []string{"chat", "--yolo", "-q", "hi"}
		if quiet {
			args = append(args, "-Q")
		}
		cmd, _, stderr := e.command(ctx, nil, args...)
		cmd.Stdout = slave
		var out bytes.Buffer
		done := make(chan struct{})
		go func() { _, _ = io.Copy(&out, master); close(done) }()
		err := cmd.Run()
		slave.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second): // the reader drains; then it is closed
			master.Close()
			<-done
		}
		cancel()
		if err != nil {
			t.Fatalf("hermes %v: %v\n%s", args, err, stderr)
		}
		got := strings.ReplaceAll(out.String(), "\r\n", "\n") // the tty's output processing
		if strings.ContainsAny(got, "\x1b\x07\r") || strings.Contains(got, "]52;") {
			t.Errorf("quiet=%v: control sequences reached the terminal: %q", quiet, got)
		}
		if !strings.Contains(got, "Done.All good\nbye") {
			t.Errorf("quiet=%v: text lost: %q", quiet, got)
		}
	}
	res := e.mustRun("chat", "-Q", "--yolo", "-q", "hi")
	if res.stdout != hostileAnswer+"\n" {
		t.Errorf("-Q into a pipe changed the bytes: %q", res.stdout)
	}
}
