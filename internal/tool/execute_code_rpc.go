package tool

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The RPC between hermes and an execute_code script's runner
// (execute_code_runner.py) is JSON lines over the unix socket the runner
// made in a fresh 0700 directory of the environment's temp dir; hermes
// dials it (through the box's init for the box backend).
//
//	hermes → runner  {"token": T}              T: 32 random bytes, hex, per call
//	runner → hermes  {"token": R}              R: another, proving the runner got the call's stdin
//	runner → hermes  {"id": N, "tool": NAME, "args": {...}}          one per call, ≤ 4 MiB
//	hermes → runner  {"id": N, "result": TEXT, "is_error": BOOL}
//
// Both tokens reach the runner on its stdin only. The runner removes the
// socket and its directory once hermes is in, so no other process can
// connect; one call at a time.

// rpcRequest is one tool call from the script.
type rpcRequest struct {
	ID   int64           `json:"id"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// rpcReply answers an rpcRequest.
type rpcReply struct {
	ID      int64  `json:"id"`
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

// errLineTooLong is a JSON line over its bound.
var errLineTooLong = errors.New("line too long")

// connect dials the runner's socket and runs the token handshake. The
// reader is the connection's, for serve (it may hold the first call).
func (s *codeScript) connect(ctx context.Context, sock, token, reply string) (net.Conn, *bufio.Reader, error) {
	dctx, cancel := context.WithTimeout(ctx, rpcDialTimeout)
	defer cancel()
	conn, err := s.dialer.DialUnix(dctx, sock)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach the script's socket: %v", err)
	}
	conn.SetDeadline(time.Now().Add(rpcDialTimeout))
	hello, _ := json.Marshal(map[string]string{"token": token})
	if _, err := conn.Write(append(hello, '\n')); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("handshake: %v", err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	line, err := readLine(r, 4096)
	var got struct {
		Token string `json:"token"`
	}
	if err == nil {
		err = json.Unmarshal(line, &got)
	}
	if err != nil || subtle.ConstantTimeCompare([]byte(got.Token), []byte(reply)) != 1 {
		conn.Close()
		return nil, nil, errors.New("handshake: the peer on the script's socket is not the runner hermes started")
	}
	conn.SetDeadline(time.Time{})
	return conn, r, nil
}

// serve answers the script's tool calls until the connection ends. The
// error is a broken request stream (the script cannot call tools after it).
func (s *codeScript) serve(ctx context.Context, conn net.Conn, r *bufio.Reader) error {
	enc := json.NewEncoder(conn)
	for {
		line, err := readLine(r, maxRPCRequest)
		switch {
		case errors.Is(err, errLineTooLong):
			return fmt.Errorf("a tool call was over %d bytes; the connection was closed", maxRPCRequest)
		case err != nil:
			return nil // the runner exited or closed the connection
		}
		var req rpcRequest
		var res Result
		if err := json.Unmarshal(line, &req); err != nil {
			res = Errorf("execute_code: a tool call that is not JSON: %v", err)
		} else {
			res = s.dispatch(ctx, req)
		}
		if err := enc.Encode(rpcReply{ID: req.ID, Result: res.Content, IsError: res.IsError}); err != nil {
			return nil
		}
	}
}

// dispatch runs one tool call of the script through the tool itself, as a
// direct call from the model would run (its approvals, protected paths,
// egress), and redacts its result.
func (s *codeScript) dispatch(ctx context.Context, req rpcRequest) (res Result) {
	tl, ok := s.tools[req.Tool]
	switch {
	case !ok:
		return Errorf("execute_code: %q cannot be called from a script; available: %s", req.Tool, strings.Join(sortedKeys(s.tools), ", "))
	case s.calls >= s.t.opts.MaxToolCalls:
		return Errorf("execute_code: this script has made its %d tool calls (code_execution.max_tool_calls); the rest was not run — finish in another step", s.t.opts.MaxToolCalls)
	case ctx.Err() != nil:
		return Errorf("execute_code: the script is stopping")
	}
	args := req.Args
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	if req.Tool == "terminal" {
		var t struct {
			Background bool `json:"background"`
		}
		if json.Unmarshal(args, &t) == nil && t.Background {
			return Errorf("execute_code: terminal runs in the foreground only inside a script (no background: true)")
		}
	}
	s.calls++
	defer func() {
		if p := recover(); p != nil {
			res = Errorf("tool %s failed internally: %v", req.Tool, p)
		}
		if s.t.opts.Redact != nil {
			res.Content = s.t.opts.Redact(res.Content)
		}
	}()
	return tl.Run(ctx, Call{ID: fmt.Sprintf("%s/%d", s.call.ID, s.calls), SessionID: s.call.SessionID, Args: args})
}

func sortedKeys(m map[string]Tool) []string {
	var out []string
	for _, n := range CodeTools {
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// readLine reads one '\n'-terminated line of at most max bytes (without
// the newline); a longer one is errLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// paramOrder returns the property names of a JSON Schema object, the
// required ones first, then the others, each in the order written.
func paramOrder(schema json.RawMessage) []string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	var names []string
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
		names = append(names, t.(string))
	}
	out := append([]string(nil), s.Required...)
	for _, n := range names {
		if !contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scriptOutput collects the runner's output: the marker line announcing
// its socket (sent on marker, kept out of the text) and, bounded, the
// script's output: the first half of limit and the last half.
type scriptOutput struct {
	marker chan string

	mu      sync.Mutex
	limit   int
	pending []byte // output before the marker line, while it is looked for
	found   bool
	done    bool // marker found, or looked for long enough
	head    []byte
	tail    []byte
	dropped int
}

func newScriptOutput(limit int) *scriptOutput {
	return &scriptOutput{marker: make(chan string, 1), limit: limit}
}

// maxBeforeMarker is how much output may come before the marker line
// (interpreter warnings) before hermes stops looking for it.
const maxBeforeMarker = 8 << 10

// Write implements io.Writer.
func (o *scriptOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		o.keep(p)
		return len(p), nil
	}
	o.pending = append(o.pending, p...)
	for {
		i := bytes.IndexByte(o.pending, '\n')
		if i < 0 {
			break
		}
		line := o.pending[:i]
		if sock, ok := bytes.CutPrefix(line, []byte(rpcMarker)); ok {
			o.found, o.done = true, true
			o.marker <- string(sock)
			rest := o.pending[i+1:]
			o.pending = nil
			o.keep(rest)
			return len(p), nil
		}
		o.keep(o.pending[:i+1])
		o.pending = o.pending[i+1:]
	}
	if len(o.pending) > maxBeforeMarker {
		o.done = true
		o.keep(o.pending)
		o.pending = nil
	}
	return len(p), nil
}

// keep adds p to the bounded text.
func (o *scriptOutput) keep(p []byte) {
	half := o.limit / 2
	if n := min(half-len(o.head), len(p)); n > 0 {
		o.head = append(o.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	o.tail = append(o.tail, p...)
	if over := len(o.tail) - (o.limit - half); over > 0 {
		o.dropped += over
		if len(o.tail) > 4*o.limit {
			o.tail = append(o.tail[:0], o.tail[over:]...)
		} else {
			o.tail = o.tail[over:]
		}
	}
}

// sawMarker reports whether the runner announced its socket.
func (o *scriptOutput) sawMarker() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.found
}

// text returns the kept output (valid UTF-8) and how many bytes were dropped.
func (o *scriptOutput) text() (string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	head, tail := o.head, append([]byte(nil), o.tail...)
	tail = append(tail, o.pending...)
	var b strings.Builder
	b.Write(head)
	if o.dropped > 0 {
		fmt.Fprintf(&b, "\n[… %d bytes of output cut …]\n", o.dropped)
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	b.Write(tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD"), o.dropped
}

var _ io.Writer = (*scriptOutput)(nil)
