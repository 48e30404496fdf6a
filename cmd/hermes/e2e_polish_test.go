package main_test

import (
	"strings"
	"testing"
)

// Regression: `hermes -z ""` said "no prompt: pass -z" although -z was
// passed. An empty -z or -q prompt is reported as empty, naming the flag.
func TestEmptyPromptFlagSaysEmpty(t *testing.T) {
	e := newE2E(t)
	for _, args := range [][]string{{"-z", ""}, {"-z", "  "}, {"chat", "-Q", "-q", ""}} {
		res := e.run(args...)
		if res.code == 0 || !strings.Contains(res.stderr, "the prompt is empty") || strings.Contains(res.stderr, "no prompt") {
			t.Errorf("hermes %q: want a failure saying the prompt is empty\n%s", args, res)
		}
	}
	if len(e.srv.Requests()) != 0 {
		t.Errorf("an empty prompt reached the model")
	}
}
