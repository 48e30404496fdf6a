package acp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRenameMethod: any input line comes back unchanged, or as a JSON
// object whose method is the extension method (nothing else renamed).
func FuzzRenameMethod(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/set_model","params":{"sessionId":"a","modelId":"b"}}`))
	f.Add([]byte(`{"method":"session/set_model"`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/prompt","params":{"prompt":[{"type":"text","text":"session/set_model"}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		out := renameMethod(line)
		if bytes.Equal(out, line) {
			return
		}
		var msg struct {
			Method string `json:"method"`
		}
		if err := json.Unmarshal(out, &msg); err != nil || msg.Method != extSetModel {
			t.Fatalf("renameMethod(%q) = %q", line, out)
		}
	})
}

// Only successful responses trigger the post-response hooks.
func TestIsResponse(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"x"}}`:                        true,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}`:                  false,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x"}}`:     false,
		`{"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{}}`: false,
	} {
		if got := isResponse([]byte(line)); got != want {
			t.Errorf("isResponse(%s) = %v", line, got)
		}
	}
}

// FuzzRequestID: any input line is a request (then its id comes back
// answered by a response of that id) or not, without panicking.
func FuzzRequestID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a b","method":"x"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"x"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		id, ok := requestID(line)
		if !ok {
			return
		}
		in := newInput()
		in.add(id)
		in.answered([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`))
		if len(in.pending) != 0 {
			t.Fatalf("request id %s not answered by a response of that id", id)
		}
	})
}

// An editor sees a terminal call's output as text with its failure, not
// the JSON the model reads.
func TestTerminalText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"output":"a\nb\n","exit_code":0}`, "a\nb\n"},
		{`{"output":"oops","exit_code":2}`, "oops\n[exit code 2]"},
		{`{"output":"","exit_code":-1,"signal":"SIGKILL","error":"timed out after 5s"}`, "[killed by SIGKILL]\n[timed out after 5s]"},
		{`command denied by the user`, `command denied by the user`},
	} {
		if got := terminalText(c.in); got != c.want {
			t.Errorf("terminalText(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}
