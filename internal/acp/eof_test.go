package acp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// A client that sends session/prompt and closes stdin (lines piped into
// `hermes acp`) gets the prompt answered before the agent exits; the old
// agent cancelled the turn at the end of its input.
func TestPromptAnsweredAfterStdinEnds(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "piped answer"})
	srv := New(Options{NewRuntime: w.newRuntime, Version: "test"})
	in, toAgent := io.Pipe()
	fromAgent, out := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), in, out); out.Close() }()
	lines := bufio.NewScanner(fromAgent)
	lines.Buffer(nil, 1<<20)
	var seen []string
	readUntil := func(want string) string {
		t.Helper()
		for lines.Scan() {
			seen = append(seen, lines.Text())
			if strings.Contains(lines.Text(), want) {
				return lines.Text()
			}
		}
		t.Fatalf("no line with %s; got:\n%s", want, strings.Join(seen, "\n"))
		return ""
	}
	fmt.Fprintln(toAgent, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	fmt.Fprintf(toAgent, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", w.work)
	resp := readUntil(`"id":2,"result"`)
	id := regexp.MustCompile(`"sessionId":"([^"]+)"`).FindStringSubmatch(resp)[1]
	fmt.Fprintf(toAgent, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}}`+"\n", id)
	toAgent.Close()
	answer := readUntil(`"id":3,`)
	if !strings.Contains(answer, `"stopReason":"end_turn"`) || !strings.Contains(strings.Join(seen, "\n"), "piped answer") {
		t.Errorf("prompt answer %s; lines:\n%s", answer, strings.Join(seen, "\n"))
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatal("Serve did not return after answering the last request")
	}
}
