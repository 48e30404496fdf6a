package anthropic

import (
	"encoding/json"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/hermes-go/hermes/internal/llm"
)

// maxCachedTools bounds toolCache; past it the cache starts over (MCP
// servers that change their tools would otherwise grow it forever).
const maxCachedTools = 512

// toolCache keeps the wire JSON of tool definitions, which a session sends
// unchanged on every model call. Built through the SDK's param structs,
// the tools were most of the cost of encoding a request: each schema was
// decoded into maps and encoded again by the SDK's reflective encoder,
// nested objects re-scanned at every level. The zero value is ready to
// use; a nil *toolCache renders without keeping anything.
type toolCache struct {
	mu sync.Mutex
	m  map[toolKey]json.RawMessage
}

type toolKey struct {
	name, description, parameters string
	last                          bool
}

// param returns t as a Messages API tool, with cache_control ephemeral
// when last (the end of the cached prefix: system prompt and tools).
func (c *toolCache) param(t llm.ToolSpec, last bool) anthropic.ToolUnionParam {
	return param.Override[anthropic.ToolUnionParam](c.wire(t, last))
}

func (c *toolCache) wire(t llm.ToolSpec, last bool) json.RawMessage {
	if c == nil {
		return renderTool(t, last)
	}
	k := toolKey{t.Name, t.Description, string(t.Parameters), last}
	c.mu.Lock()
	raw, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return raw
	}
	raw = renderTool(t, last)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedTools {
		c.m = map[toolKey]json.RawMessage{}
	}
	c.m[k] = raw
	c.mu.Unlock()
	return raw
}

// wireTool is a custom tool of the Messages API ("tools" entries).
type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

// renderTool encodes t as the SDK's ToolParam would: input_schema is the
// tool's JSON Schema object with "type": "object" and "properties" (empty
// when the tool has none) as the API requires.
func renderTool(t llm.ToolSpec, last bool) json.RawMessage {
	var schema map[string]json.RawMessage
	if json.Unmarshal(t.Parameters, &schema) != nil || schema == nil {
		schema = map[string]json.RawMessage{}
	}
	input := t.Parameters
	if _, ok := schema["properties"]; !ok || string(schema["type"]) != `"object"` {
		// Rare: encode the fixed-up schema; the usual one goes as written.
		schema["type"] = json.RawMessage(`"object"`)
		if !ok {
			schema["properties"] = json.RawMessage(`{}`)
		}
		var err error
		if input, err = json.Marshal(schema); err != nil {
			input = json.RawMessage(`{"type":"object","properties":{}}`)
		}
	}
	w := wireTool{Name: t.Name, Description: t.Description, InputSchema: input}
	if last {
		w.CacheControl = &cacheControl{Type: "ephemeral"}
	}
	raw, _ := json.Marshal(w) // strings and valid JSON only
	return raw
}
