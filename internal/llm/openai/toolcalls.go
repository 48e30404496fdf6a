package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/openai/openai-go/v3"
)

// callFor returns the state of the call a tool-call delta belongs to.
// Calls are keyed by id when the delta has one (a provider that sends the
// same call twice with the same id, at any index, gets one call) and else
// by wire index; a new id at a known index (some servers send every call at
// index 0) starts a new call.
func (s *stream) callFor(tc openai.ChatCompletionChunkChoiceDeltaToolCall) *callState {
	if tc.ID != "" {
		for _, st := range s.order {
			if st.id == tc.ID {
				s.calls[tc.Index] = st
				return st
			}
		}
	}
	st := s.calls[tc.Index]
	if st == nil || st.ended || (tc.ID != "" && st.id != "" && tc.ID != st.id) {
		if st != nil && !st.ended {
			s.endCall(st)
		}
		st = &callState{index: len(s.order)}
		s.calls[tc.Index] = st
		s.order = append(s.order, st)
	}
	return st
}

// mergeName adds a name delta to the name so far. Providers that repeat
// function.name in every delta (or send the name so far again, growing)
// would otherwise produce "terminalterminal": a delta equal to the name so
// far, or starting with it, replaces it instead of being appended.
func mergeName(sofar, delta string) string {
	switch {
	case sofar == "":
		return delta
	case delta == sofar, strings.HasPrefix(delta, sofar):
		return delta
	}
	return sofar + delta
}

// mergeArgs adds an arguments delta to the arguments so far and reports
// whether the delta is new text to stream on (false: it repeated what was
// already received, or replaced it). Handled re-sends:
//   - the arguments so far are a complete JSON value and the delta is the
//     same value again (the whole arguments re-sent in the last delta, or a
//     call sent twice): taken once;
//   - the arguments so far are complete and the delta is another complete
//     JSON value: the later one wins (a whole corrected re-send);
//   - the delta starts with the incomplete arguments so far (cumulative
//     deltas): it replaces them.
func mergeArgs(sofar []byte, delta string) (merged []byte, appended bool) {
	if len(bytes.TrimSpace(sofar)) == 0 {
		return append(sofar, delta...), true
	}
	d := strings.TrimSpace(delta)
	if d == "" {
		return append(sofar, delta...), true
	}
	if json.Valid(sofar) {
		if json.Valid([]byte(d)) {
			if jsonEqual(sofar, []byte(d)) {
				return sofar, false
			}
			return []byte(d), false
		}
		return append(sofar, delta...), true
	}
	if len(d) > len(bytes.TrimSpace(sofar)) && strings.HasPrefix(d, string(bytes.TrimSpace(sofar))) {
		return []byte(d), false
	}
	return append(sofar, delta...), true
}

// jsonEqual reports whether two valid JSON texts hold the same value.
func jsonEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	if bytes.Equal(x.Bytes(), y.Bytes()) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}
