package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// legacySetModel is the method Zed and older clients send to pick a model
// (`provider:model`); it is in neither ACP schema, so acp-go-sdk would
// answer "method not found". input.read renames it to this extension
// method, which Server handles.
const (
	legacySetModel   = "session/set_model"
	extSetModel      = "_hermes/session/set_model"
	maxProtocolLine  = 10 << 20 // the SDK's own bound on a message line
	protocolLineSize = 1 << 16
)

// input is the protocol's stdin as the SDK reads it. When the client
// closes stdin, the SDK does not see the end until every request received
// before it has been answered: `hermes acp` run from a pipe (lines of
// initialize, session/new, session/prompt, then EOF) answers the prompt
// before it exits, like any filter. Meanwhile requests of the agent to the
// client (permission, fs) fail at once (no answer can come): an edit or a
// dangerous command is denied. An editor that goes away for good closes
// stdout too, and the next write ends the process (SIGPIPE).
type input struct {
	closed chan struct{} // closed when the client's stdin ends
	quit   chan struct{} // closed when Serve returns: stop waiting

	mu      sync.Mutex
	pending map[string]int // ids of client requests not answered yet
	changed chan struct{}  // closed and replaced when pending shrinks
}

func newInput() *input {
	return &input{closed: make(chan struct{}), quit: make(chan struct{}), pending: map[string]int{}, changed: make(chan struct{})}
}

// read returns a reader of in's JSON-RPC lines with session/set_model
// requests renamed to extSetModel (other lines pass through unchanged)
// that ends once in ends and the requests it carried are answered.
func (i *input) read(in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, protocolLineSize), maxProtocolLine)
		for sc.Scan() {
			line := sc.Bytes()
			if bytes.Contains(line, []byte(legacySetModel)) {
				line = renameMethod(line)
			}
			if id, ok := requestID(line); ok {
				i.add(id)
			}
			if _, err := pw.Write(append(bytes.Clone(line), '\n')); err != nil {
				return
			}
		}
		close(i.closed)
		i.waitAnswered()
		pw.CloseWithError(sc.Err()) // nil: EOF
	}()
	return pr
}

// requestID is the id of a request line (one with an id and a method).
func requestID(line []byte) (string, bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if !bytes.Contains(line, []byte(`"id"`)) || json.Unmarshal(line, &msg) != nil || msg.ID == nil || msg.Method == "" {
		return "", false
	}
	return compactID(msg.ID), true
}

func compactID(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func (i *input) add(id string) {
	i.mu.Lock()
	i.pending[id]++
	i.mu.Unlock()
}

// answered notes an outgoing message: a response ends its request.
func (i *input) answered(msg []byte) {
	if !bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","id":`)) {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != "" || m.ID == nil {
		return // an agent's request to the client
	}
	id := compactID(m.ID)
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.pending[id] == 0 {
		return
	}
	if i.pending[id]--; i.pending[id] == 0 {
		delete(i.pending, id)
	}
	close(i.changed)
	i.changed = make(chan struct{})
}

// waitAnswered waits until no request is pending (or Serve returned).
func (i *input) waitAnswered() {
	for {
		i.mu.Lock()
		n, changed := len(i.pending), i.changed
		i.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-i.quit:
			return
		}
	}
}

// clientCtx is ctx, also ended when the client's stdin has ended: a
// request to the client then fails at once instead of waiting for an
// answer that cannot come.
func (i *input) clientCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if i == nil { // not serving
		return ctx, cancel
	}
	go func() {
		select {
		case <-i.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
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
	w  io.Writer
	in *input // told of every response written

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
	if h.in != nil {
		h.in.answered(p)
	}
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
