package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// nullErrorFilter drops a `"error": null` member from SSE data lines. The
// SDK's stream decoder treats any "error" key as a failure, and some
// OpenAI-compatible servers send "error": null in ordinary chunks. Lines
// without that text pass through unchanged.
type nullErrorFilter struct {
	src *bufio.Reader
	rc  io.Closer
	buf []byte
}

func newNullErrorFilter(rc io.ReadCloser) io.ReadCloser {
	return &nullErrorFilter{src: bufio.NewReaderSize(rc, 64<<10), rc: rc}
}

func (f *nullErrorFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.src.ReadBytes('\n')
		if len(line) > 0 {
			f.buf = rewriteNullError(line)
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

func (f *nullErrorFilter) Close() error { return f.rc.Close() }

func rewriteNullError(line []byte) []byte {
	if !bytes.HasPrefix(line, []byte("data:")) || !bytes.Contains(line, []byte(`"error"`)) {
		return line
	}
	payload := bytes.TrimSpace(line[len("data:"):])
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil {
		return line
	}
	if v, ok := obj["error"]; !ok || string(bytes.TrimSpace(v)) != "null" {
		return line
	}
	delete(obj, "error")
	out, err := json.Marshal(obj)
	if err != nil {
		return line
	}
	return append(append([]byte("data: "), out...), '\n')
}
