package main_test

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestStalledServerTimesOutAndRetries: a model server that accepts the
// request and never answers no longer hangs hermes: after
// model.request_timeout the call is retried, with one progress line on
// stderr; with -Q the retry is silent.
func TestStalledServerTimesOutAndRetries(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{Stall: true}, llmtest.Turn{Text: "answered after a stall"},
		llmtest.Turn{Status: 503}, llmtest.Turn{Text: "answered quietly"},
	)
	e.configureModel()
	e.mustRun("config", "set", "model.request_timeout", "1")
	res := e.mustRun("chat", "--yolo", "-q", "hi")
	if !strings.Contains(res.stdout, "answered after a stall") {
		t.Fatalf("stdout:\n%s", res)
	}
	var lines []string
	for _, l := range strings.Split(res.stderr, "\n") {
		if strings.Contains(l, "retrying") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "no data from openrouter for 1 s") {
		t.Errorf("want one retry line naming the stall, stderr:\n%s", res.stderr)
	}
	res = e.mustRun("chat", "-Q", "--yolo", "-q", "hi")
	if res.stdout != "answered quietly\n" || strings.Contains(res.stderr, "retrying") {
		t.Errorf("-Q run:\n%s", res)
	}
}
