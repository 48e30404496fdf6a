package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/tool"
)

// A call of a tool whose MCP server could not start says why, instead of
// "unknown tool" with the list of every other tool.
func TestUnavailableToolSaysWhy(t *testing.T) {
	reg := tool.NewRegistry()
	reg.SetUnavailable("mcp__gh__", "MCP server gh could not be started (exec: no such file)")
	a := New(Options{Tools: reg})
	res := a.runTool(context.Background(), "s1", llm.ToolCall{ID: "c1", Name: "mcp__gh__search", Arguments: `{}`})
	if !res.IsError || !strings.Contains(res.Content, "mcp__gh__search is unavailable: MCP server gh could not be started") {
		t.Fatalf("result = %+v", res)
	}
	if res := a.runTool(context.Background(), "s1", llm.ToolCall{ID: "c2", Name: "nosuch", Arguments: `{}`}); !strings.Contains(res.Content, "unknown tool") {
		t.Fatalf("unknown tool result = %+v", res)
	}
}
