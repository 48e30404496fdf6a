package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/termsafe"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/session"
)

// repl is the plain line-based interactive chat: it streams answers, shows
// tool calls as they run and asks approvals inline. Ctrl-C interrupts the
// running turn; Ctrl-D or /exit leaves.
// initial, when not empty, is submitted as the first turn (-q on a terminal).
// When it ends on a session with messages it prints how to resume it.
func (a *App) repl(ctx context.Context, rt *chatRuntime, initial string) error {
	err := a.replLoop(ctx, rt, initial)
	if hint := rt.session.ResumeHint(); err == nil && hint != "" {
		io.WriteString(a.Stdout, hint)
	}
	return err
}

// replLoop reads and runs lines until Ctrl-D, /exit or the end of ctx.
func (a *App) replLoop(ctx context.Context, rt *chatRuntime, initial string) error {
	in := bufio.NewReader(a.Stdin)
	lines := make(chan string)
	readErr := make(chan error, 1)
	eof := make(chan struct{}) // closed when stdin ends
	go func() {
		defer close(eof)
		for {
			line, err := in.ReadString('\n')
			if line != "" || err == nil {
				lines <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()

	ask := &approver{approve: func(ev session.Event) approval.Answer {
		fmt.Fprint(a.Stderr, approvalQuestion(ev.Approval))
		select {
		case l := <-lines:
			return approval.ParseAnswer(strings.TrimSpace(l))
		case <-eof:
			fmt.Fprintln(a.Stderr, "(end of input: denied)")
			return approval.Deny
		case <-ev.ApprovalDone:
			fmt.Fprintln(a.Stderr)
			return approval.Deny
		}
	}, clarify: func(ev session.Event) (string, bool) {
		fmt.Fprint(a.Stderr, clarifyQuestion(ev.Question))
		select {
		case l := <-lines:
			return l, true
		case <-eof:
			fmt.Fprintln(a.Stderr, "(end of input: no answer)")
			return "", false
		case <-ev.ApprovalDone:
			fmt.Fprintln(a.Stderr)
			return "", false
		}
	}}

	// Ctrl-C interrupts the turn, not the REPL.
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	model := rt.rt.Model()
	if model == "" {
		model = "(model from the recording)"
	}
	fmt.Fprintf(a.Stdout, "Hermes Agent v%s · %s via %s · session %s\nType /help for commands, Ctrl-D to quit.\n",
		Version, model, rt.rt.ProviderName(), rt.session.ID())
	preloaded := false
	// handle runs one line; it reports whether to quit.
	handle := func(line string) bool {
		line = strings.TrimSpace(line)
		if line == "" {
			return false
		}
		if strings.HasPrefix(line, "/") {
			quit, err := a.slashCommand(ctx, rt, line)
			if err != nil {
				fmt.Fprintln(a.Stderr, "hermes:", err)
			}
			return quit
		}
		text := line
		if !preloaded {
			var err error
			if text, err = rt.withPreloadedSkills(text); err != nil {
				fmt.Fprintln(a.Stderr, "hermes:", err)
				return false
			}
			preloaded = true
		}
		a.replTurn(ctx, rt, sigs, text, ask)
		return false
	}
	if initial != "" {
		// -q on a terminal: skills were preloaded into it already.
		preloaded = true
		fmt.Fprintf(a.Stdout, "› %s\n", preview(initial, 200))
		a.replTurn(ctx, rt, sigs, initial, ask)
	}
	for {
		fmt.Fprint(a.Stdout, "› ")
		select {
		case <-ctx.Done():
			return nil
		case <-sigs:
			fmt.Fprintln(a.Stdout, "\n(Ctrl-D or /exit to quit)")
		case err := <-readErr:
			fmt.Fprintln(a.Stdout)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case line := <-lines:
			if handle(line) {
				return nil
			}
		}
	}
}

// replTurn runs one turn; Ctrl-C (sigs) cancels it.
func (a *App) replTurn(ctx context.Context, rt *chatRuntime, sigs <-chan os.Signal, text string, ask *approver) {
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-turnCtx.Done():
		}
	}()
	res, err := rt.runTurn(turnCtx, text, ask)
	switch {
	case errors.Is(err, agent.ErrCancelled):
		rt.render.finish("")
		fmt.Fprintln(a.Stderr, "hermes: interrupted")
	case err != nil:
		rt.render.finish("")
		fmt.Fprintln(a.Stderr, "hermes:", err)
	default:
		rt.render.finish(res.Text)
		rt.review(ctx, res)
	}
}

// slashCommand runs one REPL command and reports whether to quit.
func (a *App) slashCommand(ctx context.Context, rt *chatRuntime, line string) (bool, error) {
	fields := strings.Fields(line)
	switch strings.ToLower(fields[0]) {
	case "/exit", "/quit", "/q":
		return true, nil
	case "/help":
		fmt.Fprintln(a.Stdout, "/new  start a new session   /title TEXT  name this session   /usage  token usage\n"+
			"/yolo  toggle approvals   /exit  quit")
	case "/new", "/reset":
		if err := rt.newSession(ctx, "cli"); err != nil {
			return false, err
		}
		fmt.Fprintln(a.Stdout, "new session", rt.session.ID())
	case "/title":
		if len(fields) < 2 {
			return false, errors.New("usage: /title TEXT")
		}
		title := strings.Join(fields[1:], " ")
		if err := rt.rt.Recorder().Ensure(ctx, rt.session.ID()); err != nil {
			return false, err
		}
		if err := rt.rt.Store().SetTitle(ctx, rt.session.ID(), title); err != nil {
			return false, err
		}
		fmt.Fprintf(a.Stdout, "session %s is now titled %q\n", rt.session.ID(), title)
	case "/usage":
		if rt.rt.Recorder().Pending(rt.session.ID()) {
			fmt.Fprintln(a.Stdout, "input 0 · output 0 · cache read 0 · api calls 0")
			return false, nil
		}
		s, err := rt.rt.Store().Session(ctx, rt.session.ID())
		if err != nil {
			return false, err
		}
		fmt.Fprintf(a.Stdout, "input %d · output %d · cache read %d · api calls %d\n",
			s.Usage.InputTokens, s.Usage.OutputTokens, s.Usage.CacheReadTokens, s.APICallCount)
	case "/yolo":
		rt.opts.yolo = !rt.opts.yolo
		rt.rt.Approvals().SetYolo(rt.opts.yolo)
		fmt.Fprintln(a.Stdout, "yolo:", rt.opts.yolo)
	default:
		return false, fmt.Errorf("unknown command %s (try /help)", fields[0])
	}
	return false, nil
}

// approvalQuestion is the line REPL's approval prompt for p. The
// command's control characters are shown as escapes (approval.Printable):
// a carriage return or a line erase must not hide what will run.
func approvalQuestion(p *approval.Prompt) string {
	return fmt.Sprintf("\n⚠ %s\n  %s\n  approve? [o]nce [s]ession [a]lways [d]eny: ", approval.Printable(p.Danger), p.What())
}

// clarifyQuestion is how the REPL shows a clarify question: the question,
// its numbered choices and what to type.
func clarifyQuestion(q *session.Question) string {
	var b strings.Builder
	fmt.Fprintf(&b, "? %s\n", termsafe.Clean(q.Question))
	for i, c := range q.Choices {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, termsafe.Clean(c))
	}
	if len(q.Choices) > 0 {
		b.WriteString("answer (a number or your own words): ")
	} else {
		b.WriteString("answer: ")
	}
	return b.String()
}
