package toolargs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRepair(t *testing.T) {
	cases := []struct {
		name, in, want string
		note           string // substring of the note; "" = no note
	}{
		{"valid", `{"command":"ls"}`, `{"command":"ls"}`, ""},
		{"empty", "  ", `{}`, ""},
		{"regex escape", `{"pattern":"\d+\.txt"}`, `{"pattern":"\\d+\\.txt"}`, "literal backslashes"},
		{"windows path", `{"path":"C:\tmp\new"}`, `{"path":"C:\tmp\new"}`, ""},
		{"windows path bad escape", `{"path":"C:\Users\me"}`, `{"path":"C:\\Users\\me"}`, "literal backslashes"},
		{"windows path with tmp", `{"path":"C:\Users\tmp","q":"a\"b"}`, `{"path":"C:\\Users\\tmp","q":"a\"b"}`, "literal backslashes"},
		{"regex and newline", "{\"pattern\":\"\\d+\\n\",\"content\":\"x\ny\"}", `{"pattern":"\\d+\\n","content":"x\ny"}`, "literal backslashes"},
		{"short unicode escape", `{"s":"\u12"}`, `{"s":"\\u12"}`, "literal backslashes"},
		{"literal newline", "{\"content\":\"line1\nline2\"}", `{"content":"line1\nline2"}`, "newlines"},
		{"double encoded", `"{\"command\":\"ls\"}"`, `{"command":"ls"}`, "double-encoded"},
		{"double encoded with bad escape", `"{\"pattern\":\"\\d+\"}"`, `{"pattern":"\\d+"}`, "double-encoded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Repair(c.in)
			if err != nil {
				t.Fatalf("Repair(%q): %v", c.in, err)
			}
			if res.JSON != c.want {
				t.Errorf("Repair(%q) = %s, want %s", c.in, res.JSON, c.want)
			}
			if !json.Valid([]byte(res.JSON)) {
				t.Errorf("result is not JSON: %s", res.JSON)
			}
			if c.note == "" && res.Note() != "" {
				t.Errorf("unexpected note %q", res.Note())
			}
			if c.note != "" && !strings.Contains(res.Note(), c.note) {
				t.Errorf("note %q does not mention %q", res.Note(), c.note)
			}
		})
	}
	// The backslash is kept: the tool sees the regex the model wrote.
	res, _ := Repair(`{"pattern":"\d+"}`)
	var v struct{ Pattern string }
	_ = json.Unmarshal([]byte(res.JSON), &v)
	if v.Pattern != `\d+` {
		t.Errorf("pattern = %q, want \\d+", v.Pattern)
	}
}

func TestRepairFailsClosed(t *testing.T) {
	for _, in := range []string{
		`{"command":"rm -rf /tm`,
		`{"command":"rm -rf /tmp"`,
		`{"a":1}{"a":1}`,
		`[1,2]`,
		`rm -rf /`,
		`"just a string"`,
		`{command: ls}`,
	} {
		_, err := Repair(in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Repair(%q) = %v, want an *Error", in, err)
		}
	}
	_, err := Repair(`{"command":"rm -rf /tm`)
	if !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated arguments reported as %q", err)
	}
}

func TestCoerce(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"todos":{"type":"array"},"opts":{"type":"object"},"n":{"type":"integer"},
		"x":{"type":["number","null"]},"on":{"type":"boolean"},"s":{"type":"string"}}}`)
	got, changed := Coerce(`{"todos":"[{\"id\":\"1\",\"content\":\"a\"}]","opts":"{\"k\":1}","n":"3","x":"1.5","on":"true","s":"[1]"}`, schema)
	want := `{"n":3,"on":true,"opts":{"k":1},"s":"[1]","todos":[{"id":"1","content":"a"}],"x":1.5}`
	if got != want {
		t.Errorf("Coerce = %s\nwant      %s", got, want)
	}
	if len(changed) != 5 {
		t.Errorf("changed = %v", changed)
	}
	if got, changed := Coerce(`{"todos":"not json"}`, schema); got != `{"todos":"not json"}` || changed != nil {
		t.Errorf("undecodable string changed: %s", got)
	}
}
