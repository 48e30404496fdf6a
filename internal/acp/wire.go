package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// legacySetModel is the method Zed and older clients send to pick a model
// (`provider:model`); it is in neither ACP schema, so acp-go-sdk would
// answer "method not found". rewriteLegacy renames it to this extension
// method, which Server handles.
const (
	legacySetModel   = "session/set_model"
	extSetModel      = "_hermes/session/set_model"
	maxProtocolLine  = 10 << 20 // the SDK's own bound on a message line
	protocolLineSize = 1 << 16
)

// rewriteLegacy returns a reader of in's JSON-RPC lines with
// session/set_model requests renamed to extSetModel. Other lines pass
// through unchanged.
func rewriteLegacy(in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, protocolLineSize), maxProtocolLine)
		for sc.Scan() {
			line := sc.Bytes()
			if bytes.Contains(line, []byte(legacySetModel)) {
				line = renameMethod(line)
			}
			if _, err := pw.Write(append(bytes.Clone(line), '\n')); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err()) // nil: EOF
	}()
	return pr
}

// renameMethod renames a session/set_model request line; any other line
// is returned unchanged.
func renameMethod(line []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || method != legacySetModel {
		return line
	}
	msg["method"], _ = json.Marshal(extSetModel)
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return out
}

// hookWriter is the protocol's stdout. The SDK writes each message with
// one Write and sends a response when its handler returns, so an update
// that must follow a response (available_commands_update after
// session/new: Zed and JetBrains drop it before) is sent by a hook run
// once that response has been written.
type hookWriter struct {
	w io.Writer

	mu    sync.Mutex
	hooks []writeHook
}

type writeHook struct {
	match []byte // a response holding this text triggers fn
	fn    func()
}

// after runs fn (on its own goroutine) once a response containing match
// has been written.
func (h *hookWriter) after(match string, fn func()) {
	h.mu.Lock()
	h.hooks = append(h.hooks, writeHook{match: []byte(match), fn: fn})
	h.mu.Unlock()
}

func (h *hookWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	if err != nil || !isResponse(p) {
		return n, err
	}
	h.mu.Lock()
	var run []func()
	kept := h.hooks[:0]
	for _, hk := range h.hooks {
		if bytes.Contains(p, hk.match) {
			run = append(run, hk.fn)
			continue
		}
		kept = append(kept, hk)
	}
	h.hooks = kept
	h.mu.Unlock()
	for _, fn := range run {
		go fn()
	}
	return n, err
}

// isResponse reports whether msg (as the SDK marshals it: jsonrpc, id,
// method, params, result, error in that order) is a successful response.
func isResponse(msg []byte) bool {
	rest, ok := bytes.CutPrefix(msg, []byte(`{"jsonrpc":"2.0","id":`))
	if !ok {
		return false
	}
	i := bytes.IndexByte(rest, ',')
	return i >= 0 && bytes.HasPrefix(rest[i+1:], []byte(`"result":`))
}
