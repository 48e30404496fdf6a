package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// errorShapeFilter rewrites the error payloads OpenAI-compatible servers
// put inside a 200 stream into the one shape the SDK's stream decoder
// recognises, {"error": {"message": …, "type": …, "code": …}}, so that
// every one of them ends the stream with the provider's words instead of
// an "empty response" that is retried:
//
//   - "error": null in an ordinary chunk is dropped (the SDK treats any
//     "error" key as a failure);
//   - "error": "text" becomes {"error": {"message": "text"}};
//   - flat fields error_type / error_message / error_code (LiteLLM and
//     proxies built on it send {"choices": null, "error_type":
//     "BadRequestError", "error_message": "…"}) are nested under "error";
//   - any data of an SSE frame named "event: error" becomes an error
//     object ({"message": …} or {"type": "error", "message": …} shapes,
//     or plain text).
//
// Lines that are none of these pass through unchanged.
type errorShapeFilter struct {
	src   *bufio.Reader
	rc    io.Closer
	buf   []byte
	event string // the name of the current SSE frame ("" = message)
}

func newErrorShapeFilter(rc io.ReadCloser) io.ReadCloser {
	return &errorShapeFilter{src: bufio.NewReaderSize(rc, 64<<10), rc: rc}
}

func (f *errorShapeFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.src.ReadBytes('\n')
		if len(line) > 0 {
			f.buf = f.rewrite(line)
		}
		if err != nil {
			if len(f.buf) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

func (f *errorShapeFilter) Close() error { return f.rc.Close() }

// rewrite returns line, or its replacement when it carries an error.
func (f *errorShapeFilter) rewrite(line []byte) []byte {
	trimmed := bytes.TrimRight(line, "\r\n")
	switch {
	case len(trimmed) == 0:
		f.event = ""
		return line
	case bytes.HasPrefix(trimmed, []byte("event:")):
		f.event = string(bytes.TrimSpace(trimmed[len("event:"):]))
		return line
	case !bytes.HasPrefix(trimmed, []byte("data:")):
		return line
	}
	payload := bytes.TrimSpace(trimmed[len("data:"):])
	if f.event != "error" && !bytes.Contains(payload, []byte(`"error`)) {
		return line
	}
	out, ok := normalizeErrorPayload(payload, f.event == "error")
	if !ok {
		return line
	}
	return append(append([]byte("data: "), out...), '\n')
}

// normalizeErrorPayload returns payload in the {"error": {...}} shape, or
// ok false when it needs no change. errorEvent is true for the data of an
// "event: error" frame, which is an error whatever its shape.
func normalizeErrorPayload(payload []byte, errorEvent bool) (out []byte, ok bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil {
		if !errorEvent || len(payload) == 0 {
			return nil, false
		}
		return marshalError(map[string]any{"message": string(payload)}), true
	}
	if v, has := obj["error"]; has {
		v = bytes.TrimSpace(v)
		switch {
		case string(v) == "null":
			delete(obj, "error")
			b, err := json.Marshal(obj)
			return b, err == nil
		case len(v) > 0 && v[0] == '"':
			var s string
			_ = json.Unmarshal(v, &s)
			return marshalError(map[string]any{"message": s, "type": rawString(obj["type"])}), true
		case len(v) > 0 && v[0] == '{':
			return nil, false // already the SDK's shape
		}
	}
	msg := firstString(obj, "error_message", "message", "detail")
	typ := firstString(obj, "error_type", "error_code", "code")
	if _, flat := obj["error_type"]; !flat && !errorEvent {
		if _, flatMsg := obj["error_message"]; !flatMsg {
			return nil, false
		}
	}
	if !errorEvent && msg == "" && typ == "" {
		return nil, false // "error_type": null in an ordinary chunk
	}
	if typ == "" && rawString(obj["type"]) != "error" {
		typ = rawString(obj["type"])
	}
	if msg == "" {
		msg = string(payload)
	}
	e := map[string]any{"message": msg, "type": typ}
	if code, has := obj["status_code"]; has {
		e["code"] = code
	} else if code, has := obj["code"]; has {
		e["code"] = code
	}
	return marshalError(e), true
}

func marshalError(e map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}

// firstString is the first of keys whose value in obj is a non-empty
// string (numbers are given as their text).
func firstString(obj map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		if s := rawString(obj[k]); s != "" {
			return s
		}
	}
	return ""
}

// rawString is v as text: a JSON string's value, a number's digits, else "".
func rawString(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String()
	}
	return ""
}
