package main_test

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestReasoningFlagReachesEachProvider: --reasoning LEVEL (and config
// agent.reasoning_effort) is sent the way each provider takes it, as the
// fake model server records: OpenRouter reasoning.effort, OpenAI
// reasoning_effort, Anthropic a thinking budget (none = no thinking).
func TestReasoningFlagReachesEachProvider(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "a"}, llmtest.Turn{Text: "b"}, llmtest.Turn{Text: "c"},
		llmtest.Turn{Text: "d"}, llmtest.Turn{Text: "e"})
	e.env = append(e.env, "OPENAI_BASE_URL="+e.srv.URL, "OPENAI_API_KEY=sk-test-openai",
		"ANTHROPIC_BASE_URL="+e.srv.AnthropicURL, "ANTHROPIC_API_KEY=sk-ant-test")
	chat := func(provider, model string, extra ...string) map[string]any {
		t.Helper()
		n := len(e.requests())
		args := append([]string{"chat", "-Q", "--provider", provider, "--model", model}, extra...)
		if res := e.run(append(args, "-q", "hi")...); res.code != 0 {
			t.Fatalf("%s %v\n%s", provider, extra, res)
		}
		return e.request(n)
	}

	body := chat("openrouter", "openai/gpt-5", "--reasoning", "high")
	if r, _ := body["reasoning"].(map[string]any); r["effort"] != "high" || body["reasoning_effort"] != nil {
		t.Errorf("openrouter: want reasoning.effort high, got reasoning=%v reasoning_effort=%v", body["reasoning"], body["reasoning_effort"])
	}
	body = chat("openai", "gpt-5", "--reasoning", "low")
	if body["reasoning_effort"] != "low" || body["reasoning"] != nil {
		t.Errorf("openai: want reasoning_effort low, got %v / %v", body["reasoning_effort"], body["reasoning"])
	}
	body = chat("anthropic", "claude-sonnet-4-5", "--reasoning", "medium")
	th, _ := body["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(8192) {
		t.Errorf("anthropic medium: want thinking enabled with budget_tokens 8192, got %v", body["thinking"])
	}
	if mt, _ := body["max_tokens"].(float64); mt <= 8192 {
		t.Errorf("anthropic: max_tokens %v must exceed the thinking budget", body["max_tokens"])
	}
	body = chat("anthropic", "claude-sonnet-4-5", "--reasoning", "none")
	if body["thinking"] != nil {
		t.Errorf("anthropic none: want no thinking, got %v", body["thinking"])
	}
	e.mustRun("config", "set", "agent.reasoning_effort", "xhigh")
	body = chat("openrouter", "openai/gpt-5")
	if r, _ := body["reasoning"].(map[string]any); r["effort"] != "xhigh" {
		t.Errorf("config agent.reasoning_effort xhigh: got reasoning=%v", body["reasoning"])
	}
}

// An unknown level is refused before any request, naming the choices.
func TestReasoningFlagValidated(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "never"})
	res := e.chatQ("hi", "--reasoning", "extreme")
	if res.code != 1 || !strings.Contains(res.stderr, `--reasoning "extreme"`) || !strings.Contains(res.stderr, "xhigh") {
		t.Fatalf("want exit 1 naming the flag and the levels\n%s", res)
	}
	if n := len(e.requests()); n != 0 {
		t.Errorf("%d request(s) sent with an invalid level", n)
	}
}

// --tui and --cli are accepted by a one-shot run (which has no face) and
// change nothing there; both together are refused.
func TestTUIAndCLIFlags(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	res := e.chatQ("hi", "--tui")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "one" || strings.Contains(res.stderr, "TUI") {
		t.Fatalf("--tui\n%s", res)
	}
	res = e.chatQ("hi", "--cli")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "two" || strings.Contains(res.stderr, "TUI") {
		t.Fatalf("--cli\n%s", res)
	}
	if res = e.chatQ("hi", "--tui", "--cli"); res.code != 1 || !strings.Contains(res.stderr, "mutually exclusive") {
		t.Fatalf("--tui --cli\n%s", res)
	}
}

// A custom endpoint has no reasoning setting: the level is not sent and a
// notice says so.
func TestReasoningNoticeForCustomEndpoint(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "ok"})
	res := e.run("chat", "-Q", "--provider", "custom", "--base-url", e.srv.URL, "--model", "local", "--reasoning", "high", "-q", "hi")
	if res.code != 0 || !strings.Contains(res.stderr, `reasoning effort "high" is not sent to provider custom`) {
		t.Fatalf("want a notice\n%s", res)
	}
	body := e.request(0)
	if body["reasoning"] != nil || body["reasoning_effort"] != nil {
		t.Errorf("custom endpoint got a reasoning field: %v / %v", body["reasoning"], body["reasoning_effort"])
	}
}
