package toolargs

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRepair: whatever the model sends, Repair returns a JSON object or an
// *Error, leaves a valid object unchanged, and never turns truncated text
// into a runnable call.
func FuzzRepair(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"p":"\d+"}`, "{\"s\":\"a\nb\"}", `"{\"a\":1}"`, `{"command":"rm -rf /tm`, `[1]`, ``, `"\u12"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		res, err := Repair(in)
		if err != nil {
			return
		}
		var obj map[string]any
		if json.Unmarshal([]byte(res.JSON), &obj) != nil {
			t.Fatalf("Repair(%q) = %q: not a JSON object", in, res.JSON)
		}
		if trimmed := strings.TrimSpace(in); strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) && res.JSON != trimmed {
			t.Fatalf("valid object %q changed to %q", in, res.JSON)
		}
		if !Valid(res.JSON) {
			t.Fatalf("Valid(%q) = false", res.JSON)
		}
	})
}
