package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
)

// Recorder wraps a provider and appends one Entry per model call to a
// JSON Lines file. It is safe for concurrent use.
type Recorder struct {
	inner llm.Provider
	path  string
	mu    sync.Mutex
	file  *os.File
}

// NewRecorder creates (or truncates) path and returns a provider that
// forwards to inner and records each call. Close the Recorder at the end of
// the run.
func NewRecorder(inner llm.Provider, path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--record %s: %w", path, err)
	}
	return &Recorder{inner: inner, path: path, file: f}, nil
}

// Name returns the wrapped provider's name.
func (r *Recorder) Name() string { return r.inner.Name() }

// Close flushes and closes the recording.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	err := r.file.Sync()
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	r.file = nil
	return err
}

// Stream forwards the call and records it once its stream ends or closes.
func (r *Recorder) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	sum := summarize(req)
	st, err := r.inner.Stream(ctx, req)
	if err != nil {
		r.write(Entry{Request: sum, Error: errorEntry(err)})
		return nil, err
	}
	return &recordStream{inner: st, r: r, entry: Entry{Request: sum}, args: map[int]*ToolCall{}}, nil
}

func errorEntry(err error) *Error {
	var ae *llm.APIError
	if errors.As(err, &ae) {
		return &Error{Status: ae.StatusCode, Message: ae.Message, Retryable: ae.Retryable, ContextOverflow: ae.ContextOverflow}
	}
	return &Error{Message: err.Error()}
}

func (r *Recorder) write(e Entry) {
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file != nil {
		_, _ = r.file.Write(append(line, '\n'))
	}
}

type recordStream struct {
	inner   llm.Stream
	r       *Recorder
	entry   Entry
	order   []int
	args    map[int]*ToolCall
	written bool
}

func (s *recordStream) Next() bool {
	if !s.inner.Next() {
		s.finish(s.inner.Err())
		return false
	}
	ev := s.inner.Event()
	e := &s.entry
	switch ev.Type {
	case llm.EventTextDelta:
		e.Text += ev.Text
	case llm.EventReasoningDelta:
		e.Reasoning += ev.Text
	case llm.EventReasoningSignature:
		e.ReasoningSignature += ev.Text
	case llm.EventToolCallStart:
		s.call(ev.Index, ev.ToolCall)
	case llm.EventToolCallDelta:
		tc := s.call(ev.Index, llm.ToolCall{})
		tc.Arguments = append(tc.Arguments, ev.Text...)
	case llm.EventToolCallEnd:
		tc := s.call(ev.Index, ev.ToolCall)
		tc.Arguments = []byte(ev.ToolCall.Arguments)
	case llm.EventUsage:
		u := ev.Usage
		e.Usage = &u
	case llm.EventFinish:
		e.FinishReason = ev.FinishReason
	}
	if len(ev.Raw) > 0 {
		e.ReasoningDetails = ev.Raw
	}
	return true
}

func (s *recordStream) call(i int, tc llm.ToolCall) *ToolCall {
	c, ok := s.args[i]
	if !ok {
		c = &ToolCall{}
		s.args[i] = c
		s.order = append(s.order, i)
	}
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Name != "" {
		c.Name = tc.Name
	}
	return c
}

func (s *recordStream) finish(err error) {
	if s.written {
		return
	}
	s.written = true
	for _, i := range s.order {
		c := *s.args[i]
		c.Arguments = recordArguments(string(c.Arguments))
		s.entry.ToolCalls = append(s.entry.ToolCalls, c)
	}
	if err != nil {
		s.entry.Error = errorEntry(err)
	}
	s.r.write(s.entry)
}

func (s *recordStream) Event() llm.Event { return s.inner.Event() }
func (s *recordStream) Err() error       { return s.inner.Err() }

func (s *recordStream) Close() error {
	s.finish(s.inner.Err())
	return s.inner.Close()
}
