package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// AuditRecord is one line of HERMES_HOME/logs/egress.jsonl: one decision
// on one connection (tunnel, SOCKS) or one request (plain HTTP, or a request
// inside an intercepted TLS connection). It never holds a secret value, a
// query string or a header.
type AuditRecord struct {
	Time     time.Time `json:"time"`
	Box      string    `json:"box"`               // task id of the box
	Proto    string    `json:"proto"`             // http | connect | https (intercepted) | socks5
	Method   string    `json:"method,omitempty"`  // HTTP method; CONNECT for tunnels
	Host     string    `json:"host"`              // host as requested (lower-case)
	Port     int       `json:"port"`              //
	Path     string    `json:"path,omitempty"`    // URL path without query
	Decision string    `json:"decision"`          // allow | deny
	Reason   string    `json:"reason"`            // rule or cause
	Addr     string    `json:"addr,omitempty"`    // the pinned address dialed
	Status   int       `json:"status,omitempty"`  // upstream HTTP status
	Secrets  []string  `json:"secrets,omitempty"` // names of secrets substituted
	BytesOut int64     `json:"bytes_out"`         // box → upstream
	BytesIn  int64     `json:"bytes_in"`          // upstream → box
	Error    string    `json:"error,omitempty"`   // upstream failure
}

// auditLog appends records to a JSONL file (created 0600, directory 0700).
type auditLog struct {
	path string
	mu   sync.Mutex
}

// write appends one record; a failure is returned so the caller can report
// it, but it never blocks the traffic.
func (l *auditLog) write(r AuditRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadAudit returns the last n records of the audit log at path (oldest
// first); a missing file is no records. Lines that do not parse are skipped.
func ReadAudit(path string, n int) ([]AuditRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const window = 4 << 20 // read at most the last 4 MiB
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-window, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []AuditRecord
	first := off > 0
	for sc.Scan() {
		if first { // partial line at the window start
			first = false
			continue
		}
		var r AuditRecord
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &r) != nil {
			continue
		}
		out = append(out, r)
		if len(out) > n {
			out = out[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}
