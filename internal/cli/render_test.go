package cli

import (
	"bytes"
	"testing"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/tool"
)

// Regression (issue 8): a failed terminal call was shown as
// "✗ terminal: terminal: command not run: …".
func TestToolErrorShownWithoutDoubledName(t *testing.T) {
	var diag bytes.Buffer
	r := &renderer{out: &bytes.Buffer{}, diag: &diag}
	r.event(agent.Event{Kind: agent.EventToolResult, Call: llm.ToolCall{Name: "terminal"},
		Result: tool.Result{Content: "terminal: command not run: denied", IsError: true}})
	if got := diag.String(); got != "  ✗ terminal: command not run: denied\n" {
		t.Fatalf("shown %q", got)
	}
}
