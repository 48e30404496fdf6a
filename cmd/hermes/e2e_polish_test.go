package main_test

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
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

// Regression: `config check` listed an unknown key twice, as a warning on
// stderr and as a problem on stdout. It is one problem, with file and line.
func TestConfigCheckListsUnknownKeyOnce(t *testing.T) {
	e := newE2E(t)
	e.writeFile("../hermes-home/config.yaml", "model:\n  provider: openrouter\n  default: m\ncompletely_new_thing: 1\n")
	res := e.run("config", "check")
	if res.code != 1 || strings.Count(res.stdout+res.stderr, "completely_new_thing") != 1 || !strings.Contains(res.stdout, "config.yaml:4") {
		t.Errorf("config check with an unknown key: want exit 1 and the key listed once with its line\n%s", res)
	}
}

// Regression: `terminal.backend: Box` (a bad enum value) was reported as
// "terminal.backend (from config.yaml)", without the file and line other
// config errors name. Both `config check` and a run now name them.
func TestBadBackendNamesFileAndLine(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "should not be asked"})
	e.writeFile("../hermes-home/config.yaml", "model:\n  provider: openrouter\n  default: m\nterminal:\n  backend: Box\n")
	for _, args := range [][]string{{"config", "check"}, {"-z", "hi"}} {
		res := e.run(args...)
		if res.code != 1 || !strings.Contains(res.stdout+res.stderr, "config.yaml:5: terminal.backend") {
			t.Errorf("hermes %q with backend: Box: want the file and line 5\n%s", args, res)
		}
	}
}
