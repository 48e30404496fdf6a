package openai

import (
	"encoding/json"

	"github.com/openai/openai-go/v3/packages/respjson"
)

type respjsonField = respjson.Field

// detailsMerger rebuilds OpenRouter's reasoning_details array from its
// streamed fragments: items with the same "index" are merged, string fields
// text, summary and data concatenated, other fields (type, format,
// signature, id) taken from the latest fragment that has them. The merged
// array is what OpenRouter expects back on the assistant message
// (https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks).
type detailsMerger struct {
	items []map[string]any
	byKey map[float64]int
}

func (m *detailsMerger) add(raw string) {
	var frags []map[string]any
	if json.Unmarshal([]byte(raw), &frags) != nil {
		return
	}
	if m.byKey == nil {
		m.byKey = map[float64]int{}
	}
	for _, f := range frags {
		key, hasKey := f["index"].(float64)
		pos, seen := m.byKey[key]
		if !hasKey || !seen {
			m.items = append(m.items, map[string]any{})
			pos = len(m.items) - 1
			if hasKey {
				m.byKey[key] = pos
			}
		}
		item := m.items[pos]
		for k, v := range f {
			switch k {
			case "text", "summary", "data":
				prev, _ := item[k].(string)
				next, _ := v.(string)
				item[k] = prev + next
			default:
				if v != nil && v != "" {
					item[k] = v
				}
			}
		}
	}
}

func (m *detailsMerger) merged() json.RawMessage {
	if len(m.items) == 0 {
		return nil
	}
	raw, err := json.Marshal(m.items)
	if err != nil {
		return nil
	}
	return raw
}
